/* libFuzzer target for a step description read from the network
 * (distlab/stepdesc.h, dl_step_desc_from_json): a rank in step mode sends
 * one with every step, and the shell must refuse anything malformed with
 * DL_ERR_PROTOCOL.
 *
 * The first byte is the world's size (1 to 256), the rest a JSON text.
 * Every description that is accepted must hold what from_json promises,
 * survive a to_json/from_json round trip unchanged, and format each message
 * as a line whose length the formatter reports, without trailing spaces. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/stepdesc.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_stepdesc: %s:%d: check failed: %s\n", __FILE__, __LINE__,        \
                    #cond);                                                                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static void check_accepted(const dl_step_desc_t *d, int nranks)
{
    CHECK(d->phase != NULL);
    CHECK(d->k >= 1 && d->k <= d->n);
    dl_msg_widths_t w = {0};
    dl_step_desc_widths(d, &w);
    for (size_t i = 0; i < d->n_msgs; i++) {
        const dl_msg_desc_t *m = &d->msgs[i];
        CHECK((unsigned)m->kind < DL_MSG__COUNT);
        CHECK(m->src_rank >= 0 && m->src_rank < nranks);
        CHECK(m->dst_rank >= 0 && m->dst_rank < nranks);
        CHECK(!dl_msg_is_local(m->kind) || m->src_rank == m->dst_rank);
        CHECK(m->chunk >= -1);
        CHECK(m->src.count == m->dst.count);
        CHECK(m->src.first + m->src.count >= m->src.first);
        CHECK(m->dst.first + m->dst.count >= m->dst.first);
        CHECK(m->kind != DL_MSG_LOCAL_SCALE || m->divisor >= 1);
        for (int pass = 0; pass < 2; pass++) {
            const dl_msg_widths_t *wp = pass == 0 ? NULL : &w;
            size_t len = dl_msg_format(m, wp, NULL, 0);
            char *line = malloc(len + 1);
            CHECK(line != NULL);
            CHECK(dl_msg_format(m, wp, line, len + 1) == len);
            CHECK(strlen(line) == len);
            CHECK(len > 0 && line[len - 1] != ' ');
            free(line);
        }
    }
}

static void round_trip(const dl_step_desc_t *d, int nranks)
{
    json_t *j = dl_step_desc_to_json(d);
    CHECK(j != NULL);
    dl_step_desc_t back;
    CHECK(dl_step_desc_from_json(j, nranks, &back) == DL_OK);
    CHECK(strcmp(back.phase, d->phase) == 0);
    CHECK(back.k == d->k && back.n == d->n && back.n_msgs == d->n_msgs);
    for (size_t i = 0; i < d->n_msgs; i++) {
        const dl_msg_desc_t *a = &d->msgs[i], *b = &back.msgs[i];
        CHECK(a->kind == b->kind && a->src_rank == b->src_rank && a->dst_rank == b->dst_rank);
        CHECK(a->chunk == b->chunk && a->bytes == b->bytes && a->divisor == b->divisor);
        CHECK(memcmp(&a->src, &b->src, sizeof(a->src)) == 0);
        CHECK(memcmp(&a->dst, &b->dst, sizeof(a->dst)) == 0);
        CHECK(memcmp(&a->acc, &b->acc, sizeof(a->acc)) == 0);
    }
    dl_step_desc_free(&back);
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    int nranks = (int)data[0] + 1;
    json_t *j = json_loadb((const char *)data + 1, size - 1, 0, NULL);
    if (j == NULL)
        return 0;
    dl_step_desc_t d = {.k = -7};
    dl_status_t st = dl_step_desc_from_json(j, nranks, &d);
    if (st == DL_OK) {
        check_accepted(&d, nranks);
        round_trip(&d, nranks);
        dl_step_desc_free(&d);
    } else {
        CHECK(st == DL_ERR_PROTOCOL || st == DL_ERR_NOMEM);
        CHECK(d.k == -7 && d.phase == NULL && d.msgs == NULL); /* untouched */
    }
    json_decref(j);
    return 0;
}
