/* lab/elastic/checkpoint.c: the format read back as written, its atomic
 * replacement (a writer killed at any moment leaves the old or the new
 * checkpoint, never a torn one), and every kind of damaged file refused
 * with a reason. */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lab/elastic/checkpoint.h"

static char dir[256];

static int make_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/distlab-ckpt-test-XXXXXX");
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int remove_dir(void **state)
{
    (void)state;
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (unlink(p) != 0)
            rmdir(p);
    }
    closedir(d);
    rmdir(dir);
    return 0;
}

static void path_of(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", dir, name);
}

/* A checkpoint with the shapes of the trainer's model, one optimizer
 * buffer and a scalar; the values depend on seed. Data in store. */
static void sample(lab_ckpt_t *c, float *store, size_t cap, int seed)
{
    static const struct {
        const char *name;
        int ndim;
        int64_t shape[2];
    } ts[] = {
        {"model.fc1.weight", 2, {10, 10}},
        {"model.fc1.bias", 1, {10, 0}},
        {"model.fc2.weight", 2, {5, 10}},
        {"model.fc2.bias", 1, {5, 0}},
        {"optim.fc2.bias.momentum_buffer", 1, {5, 0}},
        {"optim.scalar", 0, {0, 0}},
    };
    memset(c, 0, sizeof(*c));
    c->epoch = 7 + seed;
    c->steps = 80 + seed;
    c->world_size = 4;
    snprintf(c->optimizer, sizeof(c->optimizer), "sgd");
    c->lr = 0.01;
    c->momentum = 0.9;
    size_t used = 0;
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
        lab_ckpt_tensor_t *t = &c->tensors[c->ntensors++];
        snprintf(t->name, sizeof(t->name), "%s", ts[i].name);
        t->ndim = ts[i].ndim;
        t->numel = 1;
        for (int d = 0; d < t->ndim; d++) {
            t->shape[d] = ts[i].shape[d];
            t->numel *= (size_t)ts[i].shape[d];
        }
        assert_true(used + t->numel <= cap);
        t->data = store + used;
        for (size_t k = 0; k < t->numel; k++)
            t->data[k] = (float)seed * 1000.0f + (float)(used + k) * 0.25f - 3.0f;
        used += t->numel;
    }
}

static void assert_same(const lab_ckpt_t *a, const lab_ckpt_t *b)
{
    assert_int_equal(a->epoch, b->epoch);
    assert_int_equal(a->steps, b->steps);
    assert_int_equal(a->world_size, b->world_size);
    assert_string_equal(a->optimizer, b->optimizer);
    assert_true(a->lr == b->lr);
    assert_true(a->momentum == b->momentum);
    assert_int_equal(a->ntensors, b->ntensors);
    for (size_t i = 0; i < a->ntensors; i++) {
        const lab_ckpt_tensor_t *x = &a->tensors[i], *y = &b->tensors[i];
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->ndim, y->ndim);
        for (int d = 0; d < x->ndim; d++)
            assert_int_equal(x->shape[d], y->shape[d]);
        assert_int_equal(x->numel, y->numel);
        assert_memory_equal(x->data, y->data, sizeof(float) * x->numel);
    }
}

static uint8_t *read_file(const char *path, size_t *len_p)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len_p = (size_t)n;
    return buf;
}

static void write_file(const char *path, const uint8_t *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
}

/* Names in the test's directory that start with prefix. */
static int count_files(const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* ---- the format ---- */

static void test_roundtrip(void **state)
{
    (void)state;
    float store[256];
    lab_ckpt_t c, back;
    sample(&c, store, 256, 1);
    char path[512], why[256];
    path_of(path, sizeof(path), "roundtrip.ckpt");
    assert_int_equal(lab_ckpt_save(path, &c, why, sizeof(why)), DL_OK);
    assert_int_equal(lab_ckpt_load(path, &back, why, sizeof(why)), DL_OK);
    assert_same(&c, &back);
    const lab_ckpt_tensor_t *t = lab_ckpt_find(&back, "model.fc2.weight");
    assert_non_null(t);
    assert_int_equal(t->shape[0], 5);
    assert_null(lab_ckpt_find(&back, "model.fc3.weight"));
    lab_ckpt_free(&back);
    /* Only the checkpoint: the temporary file was renamed over it. */
    assert_int_equal(count_files("roundtrip.ckpt.tmp"), 0);

    /* The header's fields where checkpoint.h says they are. */
    size_t len = 0;
    uint8_t *buf = read_file(path, &len);
    assert_memory_equal(buf, "DLCKPT\r\n", 8);
    assert_int_equal(buf[8], LAB_CKPT_VERSION);
    assert_int_equal(buf[12], 6); /* tensors */
    uint64_t size = 0;
    for (int i = 7; i >= 0; i--)
        size = size << 8 | buf[16 + i];
    assert_int_equal(size, len);
    assert_int_equal(buf[24], 8); /* epoch */
    assert_string_equal((char *)buf + 48, "sgd");
    free(buf);
}

static void test_encode_decode(void **state)
{
    (void)state;
    float store[256];
    lab_ckpt_t c, back;
    sample(&c, store, 256, 2);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(lab_ckpt_encode(&c, &buf, &len), DL_OK);
    /* 80 header, 32 checksum, per tensor 4 + name + 4 + 8 per dim + data. */
    size_t want = 80 + 32;
    for (size_t i = 0; i < c.ntensors; i++)
        want +=
            8 + strlen(c.tensors[i].name) + 8 * (size_t)c.tensors[i].ndim + 4 * c.tensors[i].numel;
    assert_int_equal(len, want);
    char why[256];
    assert_int_equal(lab_ckpt_decode(buf, len, &back, why, sizeof(why)), DL_OK);
    assert_same(&c, &back);
    lab_ckpt_free(&back);
    free(buf);
}

static void test_missing(void **state)
{
    (void)state;
    lab_ckpt_t c;
    char path[512], why[256] = "x";
    path_of(path, sizeof(path), "absent.ckpt");
    assert_int_equal(lab_ckpt_load(path, &c, why, sizeof(why)), DL_ERR_NOT_FOUND);
    assert_string_equal(why, "");
}

/* ---- atomic replacement ---- */

/* A writer that died before its rename left PATH.tmp.<pid> half written:
 * PATH is still the old checkpoint, and the next save goes through. */
static void test_interrupted_write_keeps_old(void **state)
{
    (void)state;
    float store_a[256], store_b[256];
    lab_ckpt_t a, b, back;
    sample(&a, store_a, 256, 3);
    sample(&b, store_b, 256, 4);
    char path[512], tmp[600], why[256];
    path_of(path, sizeof(path), "atomic.ckpt");
    assert_int_equal(lab_ckpt_save(path, &a, why, sizeof(why)), DL_OK);

    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(lab_ckpt_encode(&b, &buf, &len), DL_OK);
    /* Left by a writer that was killed, and by this process's own pid. */
    snprintf(tmp, sizeof(tmp), "%s.tmp.999999", path);
    write_file(tmp, buf, len / 2);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    write_file(tmp, buf, len / 3);

    assert_int_equal(lab_ckpt_load(path, &back, why, sizeof(why)), DL_OK);
    assert_same(&a, &back);
    lab_ckpt_free(&back);

    assert_int_equal(lab_ckpt_save(path, &b, why, sizeof(why)), DL_OK);
    assert_int_equal(lab_ckpt_load(path, &back, why, sizeof(why)), DL_OK);
    assert_same(&b, &back);
    lab_ckpt_free(&back);
    /* Ours was replaced and renamed; the dead writer's is not ours to remove. */
    assert_int_equal(count_files("atomic.ckpt.tmp"), 1);
    free(buf);
}

/* A save that fails (PATH is a directory, so the rename cannot replace it)
 * leaves PATH as it was and no temporary file. */
static void test_failed_save_cleans_up(void **state)
{
    (void)state;
    float store[256];
    lab_ckpt_t c;
    sample(&c, store, 256, 5);
    char path[512], why[256] = "";
    path_of(path, sizeof(path), "isdir.ckpt");
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(lab_ckpt_save(path, &c, why, sizeof(why)), DL_ERR_IO);
    assert_non_null(strstr(why, "rename"));
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(count_files("isdir.ckpt.tmp"), 0);
    rmdir(path);

    /* A directory that does not exist: nothing is created. */
    path_of(path, sizeof(path), "nodir/x.ckpt");
    assert_int_equal(lab_ckpt_save(path, &c, why, sizeof(why)), DL_ERR_IO);
    assert_non_null(strstr(why, "cannot create"));
}

/* A child saves checkpoint after checkpoint, big enough to take a while,
 * and is killed at some moment: whatever the moment, PATH holds one whole
 * checkpoint of the ones it wrote. */
static void test_killed_writer(void **state)
{
    (void)state;
    enum { BIG = 1 << 20 };
    char path[512], why[256];
    path_of(path, sizeof(path), "killed.ckpt");
    float *data = malloc(sizeof(float) * BIG);
    assert_non_null(data);
    for (int round = 0; round < 3; round++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            lab_ckpt_t c;
            memset(&c, 0, sizeof(c));
            snprintf(c.optimizer, sizeof(c.optimizer), "sgd");
            c.ntensors = 1;
            snprintf(c.tensors[0].name, sizeof(c.tensors[0].name), "model.big");
            c.tensors[0].ndim = 1;
            c.tensors[0].shape[0] = BIG;
            c.tensors[0].numel = BIG;
            c.tensors[0].data = data;
            for (int64_t e = 0;; e++) {
                c.epoch = e;
                for (size_t k = 0; k < BIG; k++)
                    data[k] = (float)e;
                if (lab_ckpt_save(path, &c, why, sizeof(why)) != DL_OK)
                    _exit(1);
            }
        }
        /* Until the first checkpoint exists, then a little longer. */
        struct stat sb;
        while (stat(path, &sb) != 0)
            usleep(1000);
        usleep(20000 + 15000 * round);
        kill(pid, SIGKILL);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        lab_ckpt_t back;
        assert_int_equal(lab_ckpt_load(path, &back, why, sizeof(why)), DL_OK);
        assert_int_equal(back.ntensors, 1);
        assert_int_equal(back.tensors[0].numel, BIG);
        for (size_t k = 0; k < BIG; k += 4099)
            assert_true(back.tensors[0].data[k] == (float)back.epoch);
        lab_ckpt_free(&back);
        char tmp[600];
        snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)pid);
        unlink(tmp);
    }
    free(data);
}

/* ---- damaged files ---- */

static void expect_refused(const char *path, const char *words)
{
    lab_ckpt_t c;
    char why[256] = "";
    assert_int_equal(lab_ckpt_load(path, &c, why, sizeof(why)), DL_ERR_PROTOCOL);
    if (strstr(why, words) == NULL)
        fail_msg("expected '%s' in '%s'", words, why);
}

static void test_truncated(void **state)
{
    (void)state;
    float store[256];
    lab_ckpt_t c;
    sample(&c, store, 256, 6);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(lab_ckpt_encode(&c, &buf, &len), DL_OK);
    char path[512];
    path_of(path, sizeof(path), "cut.ckpt");
    size_t cuts[] = {5, 8, 40, 80, 111, 200, len - 33, len - 32, len - 1};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        write_file(path, buf, cuts[i]);
        expect_refused(path, "truncated");
    }
    write_file(path, buf, 0);
    expect_refused(path, "empty");
    /* Bytes past the end are refused too. */
    uint8_t *longer = calloc(1, len + 3);
    memcpy(longer, buf, len);
    write_file(path, longer, len + 3);
    expect_refused(path, "too long");
    free(longer);
    free(buf);
}

static void test_bad_checksum(void **state)
{
    (void)state;
    float store[256];
    lab_ckpt_t c;
    sample(&c, store, 256, 7);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(lab_ckpt_encode(&c, &buf, &len), DL_OK);
    char path[512];
    path_of(path, sizeof(path), "flip.ckpt");
    /* One bit anywhere after the fields checked before the checksum: in
     * the epoch, a name, the data, the checksum itself. */
    size_t at[] = {24, 48, 85, len / 2, len - 40, len - 1};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        buf[at[i]] ^= 0x10;
        write_file(path, buf, len);
        expect_refused(path, "checksum mismatch");
        buf[at[i]] ^= 0x10;
    }
    free(buf);
}

static void test_bad_header(void **state)
{
    (void)state;
    float store[256];
    lab_ckpt_t c;
    sample(&c, store, 256, 8);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(lab_ckpt_encode(&c, &buf, &len), DL_OK);
    char path[512];
    path_of(path, sizeof(path), "header.ckpt");
    buf[0] = 'X';
    write_file(path, buf, len);
    expect_refused(path, "not a distlab checkpoint");
    buf[0] = 'D';
    buf[8] = 2;
    write_file(path, buf, len);
    expect_refused(path, "version 2");
    buf[8] = 1;
    write_file(path, (const uint8_t *)"{\"json\": true}\n", 15);
    expect_refused(path, "not a distlab checkpoint");
    free(buf);
}

/* A file whose checksum holds but whose tensor table does not fit it (a
 * writer's mistake) is refused as well, without reading past its end. */
static void test_bad_table(void **state)
{
    (void)state;
    float store[256];
    lab_ckpt_t c;
    sample(&c, store, 256, 9);
    c.tensors[0].numel = 1; /* says 10 x 10, holds 1 */
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(lab_ckpt_encode(&c, &buf, &len), DL_OK);
    lab_ckpt_t back;
    char why[256] = "";
    assert_int_equal(lab_ckpt_decode(buf, len, &back, why, sizeof(why)), DL_ERR_PROTOCOL);
    assert_true(why[0] != '\0');
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_encode_decode),
        cmocka_unit_test(test_missing),
        cmocka_unit_test(test_interrupted_write_keeps_old),
        cmocka_unit_test(test_failed_save_cleans_up),
        cmocka_unit_test(test_killed_writer),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_bad_checksum),
        cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_bad_table),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
