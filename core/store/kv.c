/* The store server's key-value table: a chained hash table keyed by string.
 *
 * FNV-1a hashes the key; the table doubles when it holds more entries than
 * buckets, which keeps chains short without tuning. A rendezvous store holds
 * a few keys per rank, so simplicity wins over cleverness here. */
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"

#define KV_MIN_BUCKETS 64

static uint64_t kv_hash(const char *key)
{
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    return h;
}

void dl__kv_init(dl__kv_t *kv)
{
    kv->buckets = NULL;
    kv->nbuckets = 0;
    kv->count = 0;
}

static void kv_entry_free(dl__kv_entry_t *e)
{
    free(e->key);
    free(e->val);
    free(e);
}

void dl__kv_free(dl__kv_t *kv)
{
    for (size_t i = 0; i < kv->nbuckets; i++) {
        dl__kv_entry_t *e = kv->buckets[i];
        while (e != NULL) {
            dl__kv_entry_t *next = e->next;
            kv_entry_free(e);
            e = next;
        }
    }
    free(kv->buckets);
    dl__kv_init(kv);
}

/* The link that points at key's entry, or at the NULL ending its chain. */
static dl__kv_entry_t **kv_slot(const dl__kv_t *kv, const char *key, uint64_t hash)
{
    dl__kv_entry_t **slot = &kv->buckets[hash & (kv->nbuckets - 1)];
    while (*slot != NULL && ((*slot)->hash != hash || strcmp((*slot)->key, key) != 0))
        slot = &(*slot)->next;
    return slot;
}

dl__kv_entry_t *dl__kv_find(const dl__kv_t *kv, const char *key)
{
    if (kv->nbuckets == 0)
        return NULL;
    return *kv_slot(kv, key, kv_hash(key));
}

static dl_status_t kv_grow(dl__kv_t *kv)
{
    size_t nbuckets = kv->nbuckets != 0 ? kv->nbuckets * 2 : KV_MIN_BUCKETS;
    dl__kv_entry_t **buckets = calloc(nbuckets, sizeof(*buckets));
    if (buckets == NULL)
        return DL_ERR_NOMEM;
    for (size_t i = 0; i < kv->nbuckets; i++) {
        dl__kv_entry_t *e = kv->buckets[i];
        while (e != NULL) {
            dl__kv_entry_t *next = e->next;
            dl__kv_entry_t **head = &buckets[e->hash & (nbuckets - 1)];
            e->next = *head;
            *head = e;
            e = next;
        }
    }
    free(kv->buckets);
    kv->buckets = buckets;
    kv->nbuckets = nbuckets;
    return DL_OK;
}

dl_status_t dl__kv_put(dl__kv_t *kv, const char *key, uint8_t *val, size_t len)
{
    dl_status_t st = DL_OK;
    if (kv->count >= kv->nbuckets) {
        st = kv_grow(kv);
        if (st != DL_OK)
            goto err_free_val;
    }
    uint64_t hash = kv_hash(key);
    dl__kv_entry_t **slot = kv_slot(kv, key, hash);
    dl__kv_entry_t *e = *slot;
    if (e != NULL) {
        free(e->val);
        e->val = val;
        e->len = len;
        return DL_OK;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        st = DL_ERR_NOMEM;
        goto err_free_val;
    }
    e->key = strdup(key);
    if (e->key == NULL) {
        st = DL_ERR_NOMEM;
        goto err_free_entry;
    }
    e->hash = hash;
    e->val = val;
    e->len = len;
    *slot = e;
    kv->count++;
    return DL_OK;

err_free_entry:
    free(e);
err_free_val:
    free(val);
    return st;
}

dl_status_t dl__kv_delete(dl__kv_t *kv, const char *key)
{
    if (kv->nbuckets == 0)
        return DL_ERR_NOT_FOUND;
    dl__kv_entry_t **slot = kv_slot(kv, key, kv_hash(key));
    dl__kv_entry_t *e = *slot;
    if (e == NULL)
        return DL_ERR_NOT_FOUND;
    *slot = e->next;
    kv_entry_free(e);
    kv->count--;
    return DL_OK;
}
