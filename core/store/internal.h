/* Private parts of the rendezvous store: the request protocol shared by the
 * server and the client, and the server's key-value table.
 *
 * Protocol. Every request and response is one frame (frame.h). The client
 * sends one request and reads its response before sending the next.
 *
 *   request JSON                              blob     response
 *   {"op":"set","key":K}                      value    {"ok":true}
 *   {"op":"get","key":K}                      -        {"ok":true} + value blob
 *   {"op":"add","key":K,"delta":D}            -        {"ok":true,"value":N}
 *   {"op":"wait","keys":[K1,K2,...]}          -        {"ok":true}
 *   {"op":"delete","key":K}                   -        {"ok":true}
 *   {"op":"num_keys"}                         -        {"ok":true,"value":N}
 *
 * get and wait are answered only once their keys exist; the server never
 * times them out (the client does, by closing its connection). A request
 * that cannot be served is answered {"ok":false,"error":MSG,"code":ST}, with
 * ST a dl_status_t (delete of a missing key: DL_ERR_NOT_FOUND). A frame that
 * cannot be decoded gets no answer: the server drops the connection.
 *
 * A server started with a token first sends {"type":"challenge",...} on every
 * connection and serves nothing until the client has answered it (auth.h);
 * a client holding the token answers before its first request. */
#ifndef DISTLAB_STORE_INTERNAL_H
#define DISTLAB_STORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "distlab/status.h"

#define DL__STORE_OP_SET      "set"
#define DL__STORE_OP_GET      "get"
#define DL__STORE_OP_ADD      "add"
#define DL__STORE_OP_WAIT     "wait"
#define DL__STORE_OP_DELETE   "delete"
#define DL__STORE_OP_NUM_KEYS "num_keys"

/* ---- key-value table: a chained hash table of byte-string values ---- */

typedef struct dl__kv_entry {
    struct dl__kv_entry *next;
    uint64_t hash;
    char *key;
    uint8_t *val; /* malloc'd; NULL when len is 0 */
    size_t len;
} dl__kv_entry_t;

typedef struct {
    dl__kv_entry_t **buckets;
    size_t nbuckets; /* a power of two, or 0 before the first insert */
    size_t count;
} dl__kv_t;

void dl__kv_init(dl__kv_t *kv);
void dl__kv_free(dl__kv_t *kv);
dl__kv_entry_t *dl__kv_find(const dl__kv_t *kv, const char *key);
/* Stores val under key, taking ownership of val (malloc'd, or NULL when len
 * is 0) even on failure. */
dl_status_t dl__kv_put(dl__kv_t *kv, const char *key, uint8_t *val, size_t len);
/* DL_ERR_NOT_FOUND if key was absent. */
dl_status_t dl__kv_delete(dl__kv_t *kv, const char *key);

/* ---- client ---- */

struct dl_store;
/* The local IP address of the client's connection to the store, as text
 * (the TCP transport listens there: the store's host can reach it).
 * DL_ERR_CLOSED when the client is not connected right now. */
dl_status_t dl__store_local_addr(struct dl_store *store, char *buf, size_t cap);

#endif
