/* libFuzzer target for the control-frame decoder (distlab/frame.h).
 *
 * Bytes arrive from a socket in arbitrary pieces, so the input is fed in
 * chunks whose size the first byte chooses, and frames are taken after every
 * piece, as a libuv read callback would. Every frame that decodes must be an
 * object with a consistent blob, and must survive an encode/decode round
 * trip unchanged. After a protocol error the stream is dead, as it is for
 * the controller, which drops the connection. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/frame.h"
#include "distlab/log.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_frame: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Bad frames are logged where detected; thousands of them per second would
 * drown the fuzzer's own output. */
static void quiet(void *arg, dl_log_level_t level, const char *msg)
{
    (void)arg;
    (void)level;
    (void)msg;
}

static void round_trip(const dl_frame_t *f)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    dl_status_t st = dl_frame_encode(f->json, f->blob, f->blob_len, &buf, &len);
    /* A decoded frame fits the default limit, but a JSON text that jansson
     * accepts and then re-encodes longer (escapes) may not. */
    if (st == DL_ERR_TOO_BIG)
        return;
    CHECK(st == DL_OK);
    dl_frame_decoder_t d;
    dl_frame_decoder_init(&d, 0);
    CHECK(dl_frame_decoder_feed(&d, buf, len) == DL_OK);
    dl_frame_t g = {0};
    CHECK(dl_frame_decoder_next(&d, &g) == DL_OK);
    CHECK(json_equal(g.json, f->json));
    CHECK(g.blob_len == f->blob_len);
    CHECK(g.blob_len == 0 || memcmp(g.blob, f->blob, g.blob_len) == 0);
    dl_frame_clear(&g);
    CHECK(dl_frame_decoder_next(&d, &g) == DL_ERR_AGAIN);
    dl_frame_decoder_free(&d);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int initialised;
    if (!initialised) {
        dl_log_set_sink(quiet, NULL);
        initialised = 1;
    }
    if (size == 0)
        return 0;
    /* Low bits: the chunk size (1..64 bytes); the top bit: a small frame
     * limit, so that the too-big path is reachable with small inputs. */
    size_t chunk = (size_t)(data[0] & 0x3f) + 1;
    size_t max_frame = (data[0] & 0x80) ? 256 : 0;
    data++;
    size--;

    dl_frame_decoder_t d;
    dl_frame_decoder_init(&d, max_frame);
    int dead = 0;
    for (size_t off = 0; off < size && !dead; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        CHECK(dl_frame_decoder_feed(&d, data + off, n) == DL_OK);
        for (;;) {
            dl_frame_t f = {0};
            dl_status_t st = dl_frame_decoder_next(&d, &f);
            if (st == DL_OK) {
                CHECK(json_is_object(f.json));
                CHECK((f.blob == NULL) == (f.blob_len == 0));
                round_trip(&f);
                dl_frame_clear(&f);
                continue;
            }
            CHECK(f.json == NULL && f.blob == NULL);
            if (st != DL_ERR_AGAIN) {
                CHECK(st == DL_ERR_PROTOCOL || st == DL_ERR_TOO_BIG);
                dead = 1;
            }
            break;
        }
        CHECK(d.len <= d.cap);
    }
    dl_frame_decoder_free(&d);
    return 0;
}
