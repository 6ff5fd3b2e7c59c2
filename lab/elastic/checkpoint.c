/* Training checkpoints: the binary format and its atomic replacement
 * (checkpoint.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "lab/elastic/checkpoint.h"

static const char MAGIC[8] = {'D', 'L', 'C', 'K', 'P', 'T', '\r', '\n'};
#define HEADER_BYTES 80
#define SUM_BYTES    32

static void say(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *why, size_t cap, const char *fmt, ...)
{
    if (why == NULL || cap == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

static bool sha256(const uint8_t *p, size_t n, uint8_t out[SUM_BYTES])
{
    unsigned int len = 0;
    return EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) == 1 && len == SUM_BYTES;
}

/* ---- little-endian numbers ---- */

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_f64(uint8_t *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    put_u64(p, u);
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static double get_f64(const uint8_t *p)
{
    uint64_t u = get_u64(p);
    double v;
    memcpy(&v, &u, 8);
    return v;
}

/* ---- encoding ---- */

dl_status_t lab_ckpt_encode(const lab_ckpt_t *c, uint8_t **buf_p, size_t *len_p)
{
    if (c->ntensors > LAB_CKPT_MAX_TENSORS)
        return DL_ERR_INVALID;
    size_t len = HEADER_BYTES + SUM_BYTES;
    for (size_t i = 0; i < c->ntensors; i++) {
        const lab_ckpt_tensor_t *t = &c->tensors[i];
        if (t->ndim < 0 || t->ndim > DL_MAX_DIMS)
            return DL_ERR_INVALID;
        len += 4 + strnlen(t->name, LAB_CKPT_NAME_MAX) + 4 + 8 * (size_t)t->ndim + 4 * t->numel;
    }
    uint8_t *buf = calloc(1, len);
    if (buf == NULL)
        return DL_ERR_NOMEM;
    memcpy(buf, MAGIC, sizeof(MAGIC));
    put_u32(buf + 8, LAB_CKPT_VERSION);
    put_u32(buf + 12, (uint32_t)c->ntensors);
    put_u64(buf + 16, len);
    put_u64(buf + 24, (uint64_t)c->epoch);
    put_u64(buf + 32, (uint64_t)c->steps);
    put_u32(buf + 40, (uint32_t)c->world_size);
    strncpy((char *)buf + 48, c->optimizer, 16);
    put_f64(buf + 64, c->lr);
    put_f64(buf + 72, c->momentum);
    uint8_t *p = buf + HEADER_BYTES;
    for (size_t i = 0; i < c->ntensors; i++) {
        const lab_ckpt_tensor_t *t = &c->tensors[i];
        size_t nlen = strnlen(t->name, LAB_CKPT_NAME_MAX);
        put_u32(p, (uint32_t)nlen);
        memcpy(p + 4, t->name, nlen);
        p += 4 + nlen;
        put_u32(p, (uint32_t)t->ndim);
        p += 4;
        for (int d = 0; d < t->ndim; d++, p += 8)
            put_u64(p, (uint64_t)t->shape[d]);
        for (size_t k = 0; k < t->numel; k++, p += 4) {
            uint32_t u;
            memcpy(&u, &t->data[k], 4);
            put_u32(p, u);
        }
    }
    if (!sha256(buf, len - SUM_BYTES, p)) {
        free(buf);
        return DL_ERR_SYSTEM;
    }
    *buf_p = buf;
    *len_p = len;
    return DL_OK;
}

/* ---- decoding ---- */

void lab_ckpt_free(lab_ckpt_t *c)
{
    for (size_t i = 0; i < c->ntensors && i < LAB_CKPT_MAX_TENSORS; i++) {
        free(c->tensors[i].data);
        c->tensors[i].data = NULL;
    }
}

/* The tensor table that starts at buf[*off], into t. */
static bool decode_tensor(const uint8_t *buf, size_t end, size_t *off, lab_ckpt_tensor_t *t,
                          size_t index, char *why, size_t cap)
{
    size_t p = *off;
    if (end - p < 4) {
        say(why, cap, "tensor %zu runs past the end of the data", index);
        return false;
    }
    uint32_t nlen = get_u32(buf + p);
    p += 4;
    if (nlen == 0 || nlen >= LAB_CKPT_NAME_MAX || end - p < nlen + 4) {
        say(why, cap, "tensor %zu has a name of %u bytes", index, nlen);
        return false;
    }
    memcpy(t->name, buf + p, nlen);
    t->name[nlen] = '\0';
    p += nlen;
    uint32_t ndim = get_u32(buf + p);
    p += 4;
    if (ndim > DL_MAX_DIMS || end - p < 8 * (size_t)ndim) {
        say(why, cap, "tensor %s has %u dimensions", t->name, ndim);
        return false;
    }
    t->ndim = (int)ndim;
    size_t numel = 1;
    for (uint32_t d = 0; d < ndim; d++, p += 8) {
        uint64_t s = get_u64(buf + p);
        if (s > LAB_CKPT_MAX_BYTES / 4 || (s > 0 && numel > LAB_CKPT_MAX_BYTES / 4 / s)) {
            say(why, cap, "tensor %s has a size of %llu in dimension %u", t->name,
                (unsigned long long)s, d);
            return false;
        }
        t->shape[d] = (int64_t)s;
        numel *= (size_t)s;
    }
    if ((end - p) / 4 < numel) {
        say(why, cap, "tensor %s runs past the end of the data", t->name);
        return false;
    }
    t->numel = numel;
    t->data = malloc(sizeof(float) * (numel > 0 ? numel : 1));
    if (t->data == NULL) {
        say(why, cap, "out of memory");
        return false;
    }
    for (size_t k = 0; k < numel; k++, p += 4) {
        uint32_t u = get_u32(buf + p);
        memcpy(&t->data[k], &u, 4);
    }
    *off = p;
    return true;
}

dl_status_t lab_ckpt_decode(const uint8_t *buf, size_t len, lab_ckpt_t *c_p, char *why, size_t cap)
{
    if (len == 0) {
        say(why, cap, "empty (0 bytes)");
        return DL_ERR_PROTOCOL;
    }
    if (memcmp(buf, MAGIC, len < sizeof(MAGIC) ? len : sizeof(MAGIC)) != 0) {
        say(why, cap, "not a distlab checkpoint (no DLCKPT magic at its start)");
        return DL_ERR_PROTOCOL;
    }
    if (len < HEADER_BYTES + SUM_BYTES) {
        say(why, cap, "truncated: %zu bytes, shorter than a checkpoint's header", len);
        return DL_ERR_PROTOCOL;
    }
    uint32_t version = get_u32(buf + 8);
    if (version != LAB_CKPT_VERSION) {
        say(why, cap, "version %u, but this distlab reads version %d", version, LAB_CKPT_VERSION);
        return DL_ERR_PROTOCOL;
    }
    uint64_t size = get_u64(buf + 16);
    if (size != len) {
        say(why, cap, "%s: %zu bytes, but its header says %llu",
            size > len ? "truncated" : "too long", len, (unsigned long long)size);
        return DL_ERR_PROTOCOL;
    }
    uint8_t sum[SUM_BYTES];
    if (!sha256(buf, len - SUM_BYTES, sum)) {
        say(why, cap, "cannot compute its SHA-256");
        return DL_ERR_SYSTEM;
    }
    if (memcmp(sum, buf + len - SUM_BYTES, SUM_BYTES) != 0) {
        say(why, cap, "checksum mismatch: the file is corrupt");
        return DL_ERR_PROTOCOL;
    }
    /* The checksum held; what follows catches a writer's mistakes. */
    lab_ckpt_t c;
    memset(&c, 0, sizeof(c));
    size_t n = get_u32(buf + 12);
    if (n > LAB_CKPT_MAX_TENSORS) {
        say(why, cap, "%zu tensors, more than the %d a checkpoint may hold", n,
            LAB_CKPT_MAX_TENSORS);
        return DL_ERR_PROTOCOL;
    }
    c.epoch = (int64_t)get_u64(buf + 24);
    c.steps = (int64_t)get_u64(buf + 32);
    c.world_size = (int)get_u32(buf + 40);
    memcpy(c.optimizer, buf + 48, sizeof(c.optimizer) - 1);
    c.lr = get_f64(buf + 64);
    c.momentum = get_f64(buf + 72);
    size_t off = HEADER_BYTES, end = len - SUM_BYTES;
    for (size_t i = 0; i < n; i++) {
        if (!decode_tensor(buf, end, &off, &c.tensors[i], i, why, cap)) {
            c.ntensors = i;
            lab_ckpt_free(&c);
            return DL_ERR_PROTOCOL;
        }
        c.ntensors = i + 1;
    }
    if (off != end) {
        say(why, cap, "%zu bytes after the last tensor", end - off);
        lab_ckpt_free(&c);
        return DL_ERR_PROTOCOL;
    }
    *c_p = c;
    return DL_OK;
}

const lab_ckpt_tensor_t *lab_ckpt_find(const lab_ckpt_t *c, const char *name)
{
    for (size_t i = 0; i < c->ntensors; i++)
        if (strcmp(c->tensors[i].name, name) == 0)
            return &c->tensors[i];
    return NULL;
}

/* ---- files ---- */

static bool write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* fsyncs the directory that holds path, so that a rename in it is durable. */
static bool sync_dir(const char *path)
{
    char *copy = strdup(path);
    if (copy == NULL)
        return false;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(copy);
    if (fd < 0)
        return false;
    bool ok = fsync(fd) == 0 || errno == EINVAL; /* some file systems cannot */
    close(fd);
    return ok;
}

dl_status_t lab_ckpt_save(const char *path, const lab_ckpt_t *c, char *why, size_t cap)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    dl_status_t st = lab_ckpt_encode(c, &buf, &len);
    if (st != DL_OK) {
        say(why, cap, "cannot encode it: %s", dl_strerror(st));
        return st;
    }
    char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp.%ld", path, (long)getpid()) < 0) {
        free(buf);
        say(why, cap, "out of memory");
        return DL_ERR_NOMEM;
    }
    st = DL_ERR_IO;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        say(why, cap, "cannot create %s: %s", tmp, strerror(errno));
        goto err_free;
    }
    if (!write_all(fd, buf, len)) {
        say(why, cap, "cannot write %s: %s", tmp, strerror(errno));
        close(fd);
        goto err_unlink;
    }
    if (fsync(fd) != 0) {
        say(why, cap, "cannot fsync %s: %s", tmp, strerror(errno));
        close(fd);
        goto err_unlink;
    }
    if (close(fd) != 0) {
        say(why, cap, "cannot close %s: %s", tmp, strerror(errno));
        goto err_unlink;
    }
    if (rename(tmp, path) != 0) {
        say(why, cap, "cannot rename %s over it: %s", tmp, strerror(errno));
        goto err_unlink;
    }
    /* The new checkpoint is in place; the directory's fsync makes the
     * rename survive a crash of the machine. */
    if (!sync_dir(path)) {
        say(why, cap, "cannot fsync its directory: %s", strerror(errno));
        goto err_free;
    }
    free(tmp);
    free(buf);
    return DL_OK;

err_unlink:
    unlink(tmp);
err_free:
    free(tmp);
    free(buf);
    return st;
}

dl_status_t lab_ckpt_load(const char *path, lab_ckpt_t *c, char *why, size_t cap)
{
    say(why, cap, "%s", "");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return DL_ERR_NOT_FOUND;
        say(why, cap, "cannot open it: %s", strerror(errno));
        return DL_ERR_IO;
    }
    dl_status_t st = DL_ERR_IO;
    uint8_t *buf = NULL;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        say(why, cap, "cannot stat it: %s", strerror(errno));
        goto err_close;
    }
    if (!S_ISREG(sb.st_mode)) {
        say(why, cap, "not a regular file");
        goto err_close;
    }
    if ((uint64_t)sb.st_size > LAB_CKPT_MAX_BYTES) {
        say(why, cap, "%lld bytes, more than a checkpoint may have", (long long)sb.st_size);
        st = DL_ERR_TOO_BIG;
        goto err_close;
    }
    size_t len = (size_t)sb.st_size;
    buf = malloc(len > 0 ? len : 1);
    if (buf == NULL) {
        say(why, cap, "out of memory");
        st = DL_ERR_NOMEM;
        goto err_close;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t k = read(fd, buf + got, len - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            say(why, cap, "cannot read it: %s", strerror(errno));
            goto err_free;
        }
        if (k == 0)
            break; /* shrank while we read: decode sees a short file */
        got += (size_t)k;
    }
    st = lab_ckpt_decode(buf, got, c, why, cap);

err_free:
    free(buf);
err_close:
    close(fd);
    return st;
}
