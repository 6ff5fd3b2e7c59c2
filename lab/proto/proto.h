/* The control plane between the controller and its ranks: framed JSON
 * messages (core/include/distlab/frame.h). Commands go down, events come up.
 *
 * Down:  {"type":"job", ...job}             run a job (lab/proto/job.h)
 *        {"type":"exec","id","batch","stmt"} run a shell statement; a batch's
 *                                           statements arrive together
 *        {"type":"config", "timeout"|"coll","algo"|"step"|"check"}
 *        {"type":"verdict","ok","message","quiet"}  answer to a "coll" event
 *        {"type":"go","run","step"}         step mode: run the next step
 *                                           (run: the rest of the collective)
 *        {"type":"abort","why"}             give up what waits on the shell
 *        {"type":"interrupted"}             follows SIGUSR2 (Ctrl-C): the
 *                                           next statement runs as usual
 *        {"type":"peer_died","why"}         a rank died: take the world down
 *        {"type":"given_up","batch"}        the shell gave this rank's
 *                                           batch up (it stopped answering):
 *                                           what of it has not run is skipped
 *        {"type":"exit"}                    leave cleanly
 * Up:    {"type":"hello","rank","pid","host"}
 *        {"type":"ready"}                   the communicator is up
 *        {"type":"snap","label","name","index","of","dtype","shape","shown"} + data
 *        {"type":"snap","label","name","none":true}  a name that holds None,
 *                                           as torch's gather_list on a
 *                                           rank other than dst (no data)
 *        {"type":"step","coll","algo","step","steps","phase","done"}
 *                                           in step mode also "pause",
 *                                           "group", "desc" (the step's
 *                                           description, distlab/stepdesc.h),
 *                                           and the buffer ("dtype","shape")
 *                                           + data
 *        {"type":"coll","ctx","seq","group","coll","dtype","count","root","op"}
 *                                           a collective's fingerprint
 *        {"type":"unbound","name"}          del NAME: the name is gone
 *        {"type":"note","text"}             a line the run prints for this rank
 *        {"type":"bench", ...}              one size's measurement
 *        {"type":"log","level","text"}      a log line of the rank
 *        {"type":"done", ...} / {"type":"error","message","quiet"} /
 *        {"type":"skipped"}                 a statement after a failed one
 * Events of a shell statement carry its "id".
 */
#ifndef LAB_PROTO_H
#define LAB_PROTO_H

#include <stdbool.h>

#include <jansson.h>

#include "distlab/frame.h"
#include "distlab/tensor.h"

/* A tensor snapshot: the JSON fields; the blob holds the data. A snapshot
 * is only ever printed, so of a tensor that prints summarised the blob
 * holds only the shown elements (dl_tensor_copy_shown), and "shown": true
 * says so. */
json_t *lab_snap_json(const char *label, const char *name, int index, int of, const dl_tensor_t *t);
/* The most a snapshot asked for whole (lab_shell_whole) carries; a larger
 * tensor comes as a print shows it, as one frame holds at most
 * DL_FRAME_MAX. */
#define LAB_SNAP_WHOLE_MAX (64u << 20)
/* The label of a snapshot for the views' copy of a tensor alone, not a
 * result to print: an irecv's tensor once its wait is over (wait's own
 * note says what came). */
#define LAB_SNAP_VIEW "view"
/* A snapshot of a name that holds no tensor but None, and whether a frame is one. */
json_t *lab_snap_none_json(const char *label, const char *name);
bool lab_snap_is_none(const dl_frame_t *f);
/* Rebuilds a tensor from a frame whose blob is all of its data (heap memory). */
dl_status_t lab_snap_tensor(const dl_frame_t *f, dl_tensor_t **t_p);
/* Reads a snapshot frame: the tensor's shape (ndim_p, shape with room for
 * DL_MAX_DIMS) and a heap tensor of the elements it carries, the shown
 * block of dl_tensor_shown_shape when it came summarised, for
 * dl_tensor_format_shown. */
dl_status_t lab_snap_shown(const dl_frame_t *f, int *ndim_p, int64_t *shape, dl_tensor_t **t_p);
/* The device the snapshot's tensor lived on (its data arrives on the host). */
dl_device_t lab_snap_device(const dl_frame_t *f);

/* The "type" field, or "" when missing. */
const char *lab_msg_type(const json_t *msg);
const char *lab_json_str(const json_t *obj, const char *key, const char *dflt);
long long lab_json_int(const json_t *obj, const char *key, long long dflt);
double lab_json_num(const json_t *obj, const char *key, double dflt);

#endif
