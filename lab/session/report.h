/* Views of the session model after a job: the `run` transcript, the bench
 * table, and failure reports. Output is in rank order, always. */
#ifndef LAB_REPORT_H
#define LAB_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lab/proto/job.h"
#include "lab/session/session.h"

void lab_report_run(FILE *out, const lab_job_t *job, const lab_session_t *s);
void lab_report_bench(FILE *out, const lab_job_t *job, const lab_session_t *s);
/* The same as each row comes, as nccl-tests prints it: the header before
 * the first row, rows [o->printed, upto) (upto: how many every rank has
 * reported), then, at the end, the totals. o starts zeroed. */
typedef struct {
    bool head;      /* the header is out */
    size_t printed; /* rows out */
    double sum_bw;
    long long wrong;
} lab_bench_out_t;
void lab_report_bench_rows(FILE *out, const lab_job_t *job, const lab_session_t *s,
                           lab_bench_out_t *o, size_t upto);
void lab_report_bench_end(FILE *out, const lab_job_t *job, const lab_bench_out_t *o);
void lab_report_bench_json(FILE *out, const lab_job_t *job, const lab_session_t *s);
/* What a statement's results print, by `set echo`: everything (on), all
 * but what assignments bound (off), or only what print showed (print). */
typedef enum { LAB_ECHO_ALL, LAB_ECHO_NO_ASSIGN, LAB_ECHO_PRINT_ONLY } lab_echo_t;
/* One rank's results of a shell statement: its notes and tensors, in the
 * order the rank sent them, as much of them as echo shows. */
void lab_report_rank_results(FILE *out, int r, const lab_rank_model_t *m, lab_echo_t echo);
/* Each failed rank's error, then (if any) its log lines. */
void lab_report_errors(FILE *out, const lab_session_t *s);
/* "0", "0-3", "0, 2, 5-7": the ranks r < np where in[r], as a line names
 * them. */
void lab_report_rank_list(const bool *in, int np, char *buf, size_t cap);

#endif
