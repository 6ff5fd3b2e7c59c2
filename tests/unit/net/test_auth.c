/* Token authentication (distlab/auth.h): the challenge-response over a
 * socket pair, with the server's side played by hand so that each way of
 * cheating can be tried, and the token file checks. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "distlab/auth.h"
#include "distlab/frame.h"

#define TOKEN "an-example-session-token-0123456789"

/* ---- a client in a thread ---- */

typedef struct {
    int fd;
    const char *token;
    dl_status_t st;
    json_t *welcome;
} client_t;

static void *client_main(void *arg)
{
    client_t *c = arg;
    json_t *extra = json_pack("{s:s, s:i}", "role", "worker", "nproc", 2);
    c->st = dl_auth_client_fd(c->fd, c->token, extra, 2000, &c->welcome);
    json_decref(extra);
    return NULL;
}

typedef struct {
    int fds[2]; /* [0] the server's end, [1] the client's */
    pthread_t th;
    client_t client;
} pair_t;

static void pair_start(pair_t *p, const char *token)
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, p->fds), 0);
    p->client = (client_t){.fd = p->fds[1], .token = token};
    assert_int_equal(pthread_create(&p->th, NULL, client_main, &p->client), 0);
}

/* Waits for the client; the welcome it got is the caller's to release. */
static void pair_finish(pair_t *p)
{
    pthread_join(p->th, NULL);
    close(p->fds[1]);
}

/* The server's first two steps: send a challenge, read the answer. */
static json_t *challenge_and_read(int fd, char nonce[DL_AUTH_HEX_LEN])
{
    assert_int_equal(dl_auth_new_nonce(nonce), DL_OK);
    json_t *ch = dl_auth_challenge(nonce);
    assert_int_equal(dl_frame_send_fd(fd, ch, NULL, 0, 2000), DL_OK);
    json_decref(ch);
    dl_frame_t f = {0};
    assert_int_equal(dl_frame_recv_fd(fd, &f, 2000), DL_OK);
    json_t *auth = json_incref(f.json);
    dl_frame_clear(&f);
    return auth;
}

/* ---- the exchange ---- */

static void test_good_token(void **state)
{
    (void)state;
    pair_t p;
    pair_start(&p, TOKEN);
    char nonce[DL_AUTH_HEX_LEN];
    json_t *auth = challenge_and_read(p.fds[0], nonce);
    /* The caller's fields travel with the answer; the token does not. */
    assert_string_equal(json_string_value(json_object_get(auth, "role")), "worker");
    assert_int_equal(json_integer_value(json_object_get(auth, "nproc")), 2);
    char *text = json_dumps(auth, JSON_COMPACT);
    assert_null(strstr(text, TOKEN));
    free(text);
    json_t *welcome = dl_auth_answer(TOKEN, nonce, auth);
    assert_non_null(welcome);
    json_object_set_new(welcome, "worker", json_integer(7));
    assert_int_equal(dl_frame_send_fd(p.fds[0], welcome, NULL, 0, 2000), DL_OK);
    json_decref(welcome);
    json_decref(auth);
    pair_finish(&p);
    assert_int_equal(p.client.st, DL_OK);
    assert_int_equal(json_integer_value(json_object_get(p.client.welcome, "worker")), 7);
    json_decref(p.client.welcome);
    close(p.fds[0]);
}

static void test_wrong_token(void **state)
{
    (void)state;
    pair_t p;
    pair_start(&p, "not-the-token-but-long-enough");
    char nonce[DL_AUTH_HEX_LEN];
    json_t *auth = challenge_and_read(p.fds[0], nonce);
    assert_null(dl_auth_answer(TOKEN, nonce, auth));
    json_decref(auth);
    /* The server refuses by closing. */
    close(p.fds[0]);
    pair_finish(&p);
    assert_int_equal(p.client.st, DL_ERR_DENIED);
    assert_null(p.client.welcome);
}

static void test_replayed_answer(void **state)
{
    (void)state;
    /* A recorded answer is worthless against a fresh challenge. */
    pair_t p;
    pair_start(&p, TOKEN);
    char nonce[DL_AUTH_HEX_LEN];
    json_t *recorded = challenge_and_read(p.fds[0], nonce);
    json_t *welcome = dl_auth_answer(TOKEN, nonce, recorded);
    assert_non_null(welcome);
    assert_int_equal(dl_frame_send_fd(p.fds[0], welcome, NULL, 0, 2000), DL_OK);
    json_decref(welcome);
    pair_finish(&p);
    assert_int_equal(p.client.st, DL_OK);
    json_decref(p.client.welcome);
    close(p.fds[0]);

    char fresh[DL_AUTH_HEX_LEN];
    assert_int_equal(dl_auth_new_nonce(fresh), DL_OK);
    assert_string_not_equal(fresh, nonce);
    assert_null(dl_auth_answer(TOKEN, fresh, recorded));
    json_decref(recorded);
}

static void test_reflected_nonce(void **state)
{
    (void)state;
    /* An attacker that sends our own nonce back as its nonce, with a MAC it
     * obtained elsewhere, is refused. */
    char nonce[DL_AUTH_HEX_LEN], mac[DL_AUTH_HEX_LEN];
    assert_int_equal(dl_auth_new_nonce(nonce), DL_OK);
    dl_auth_mac(TOKEN, "client", nonce, nonce, mac);
    json_t *auth = json_pack("{s:s, s:s, s:s}", "type", "auth", "nonce", nonce, "mac", mac);
    assert_null(dl_auth_answer(TOKEN, nonce, auth));
    json_decref(auth);

    /* A server that does not hold the token cannot pass the client's own
     * MAC off as its proof: the sides are in the MAC. */
    pair_t p;
    pair_start(&p, TOKEN);
    json_t *answer = challenge_and_read(p.fds[0], nonce);
    json_t *fake =
        json_pack("{s:s, s:O}", "type", "welcome", "mac", json_object_get(answer, "mac"));
    assert_int_equal(dl_frame_send_fd(p.fds[0], fake, NULL, 0, 2000), DL_OK);
    json_decref(fake);
    json_decref(answer);
    pair_finish(&p);
    close(p.fds[0]);
    assert_int_equal(p.client.st, DL_ERR_DENIED);
}

static void test_malformed_answers(void **state)
{
    (void)state;
    char nonce[DL_AUTH_HEX_LEN], cn[DL_AUTH_HEX_LEN], mac[DL_AUTH_HEX_LEN];
    assert_int_equal(dl_auth_new_nonce(nonce), DL_OK);
    assert_int_equal(dl_auth_new_nonce(cn), DL_OK);
    dl_auth_mac(TOKEN, "client", nonce, cn, mac);
    json_t *good = json_pack("{s:s, s:s, s:s}", "type", "auth", "nonce", cn, "mac", mac);
    json_t *w = dl_auth_answer(TOKEN, nonce, good);
    assert_non_null(w);
    json_decref(w);

    json_t *bad[] = {
        json_pack("{s:s, s:s, s:s}", "type", "hello", "nonce", cn, "mac", mac),
        json_pack("{s:s, s:s}", "type", "auth", "nonce", cn),
        json_pack("{s:s, s:s, s:s}", "type", "auth", "nonce", "xyz", "mac", mac),
        json_pack("{s:s, s:s, s:s}", "type", "auth", "nonce", cn, "mac", "00"),
        json_pack("{s:s, s:s, s:i}", "type", "auth", "nonce", cn, "mac", 5),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_null(dl_auth_answer(TOKEN, nonce, bad[i]));
        json_decref(bad[i]);
    }
    /* The same answer with a different token. */
    assert_null(dl_auth_answer(TOKEN "x", nonce, good));
    json_decref(good);
}

/* ---- token files ---- */

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static void test_token_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/distlab-test-auth-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], err[256];
    char *token = NULL;
    snprintf(path, sizeof(path), "%s/token", dir);

    write_file(path, "  " TOKEN " \n second line\n", 0600);
    assert_int_equal(dl_auth_read_token_file(path, &token, err, sizeof(err)), DL_OK);
    assert_string_equal(token, TOKEN);
    free(token);
    token = NULL;

    /* Readable by others: refused, like ssh refuses such a key. */
    write_file(path, TOKEN "\n", 0644);
    assert_int_equal(dl_auth_read_token_file(path, &token, err, sizeof(err)), DL_ERR_DENIED);
    assert_null(token);
    assert_non_null(strstr(err, "readable by others"));
    write_file(path, TOKEN "\n", 0640);
    assert_int_equal(dl_auth_read_token_file(path, &token, err, sizeof(err)), DL_ERR_DENIED);

    /* Too short to resist guessing. */
    write_file(path, "short\n", 0600);
    assert_int_equal(dl_auth_read_token_file(path, &token, err, sizeof(err)), DL_ERR_DENIED);
    assert_non_null(strstr(err, "too short"));
    write_file(path, "", 0600);
    assert_int_equal(dl_auth_read_token_file(path, &token, err, sizeof(err)), DL_ERR_DENIED);

    unlink(path);
    assert_int_equal(dl_auth_read_token_file(path, &token, err, sizeof(err)), DL_ERR_IO);
    assert_non_null(strstr(err, "cannot read"));
    rmdir(dir);

    /* Fresh tokens are long and differ. */
    char a[DL_AUTH_HEX_LEN], b[DL_AUTH_HEX_LEN];
    assert_int_equal(dl_auth_new_token(a), DL_OK);
    assert_int_equal(dl_auth_new_token(b), DL_OK);
    assert_true(strlen(a) >= DL_AUTH_TOKEN_MIN);
    assert_string_not_equal(a, b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_token),        cmocka_unit_test(test_wrong_token),
        cmocka_unit_test(test_replayed_answer),   cmocka_unit_test(test_reflected_nonce),
        cmocka_unit_test(test_malformed_answers), cmocka_unit_test(test_token_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
