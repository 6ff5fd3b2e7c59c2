/* Token authentication (see distlab/auth.h). OpenSSL provides the HMAC, the
 * random bytes and the constant-time comparison. */
#include "distlab/auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "distlab/frame.h"
#include "distlab/log.h"

/* OpenSSL initialises itself on first use, reading the system's openssl.cnf
 * and registering every cipher and digest: about a millisecond of every
 * rank's start-up, for one HMAC-SHA256 and some random bytes, which need
 * neither. Whichever of these calls comes first initialises it without.
 * Nor does it free its tables at exit (OPENSSL_cleanup, by atexit): every
 * rank forked from the fork server would run that, a tenth of the CPU a
 * 64-rank job takes, for memory the exit gives back anyway. */
static void crypto_init(void)
{
    OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ADD_ALL_CIPHERS |
                            OPENSSL_INIT_NO_ADD_ALL_DIGESTS | OPENSSL_INIT_NO_ATEXIT,
                        NULL);
}

static void to_hex(const uint8_t *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

static dl_status_t random_hex(char out[DL_AUTH_HEX_LEN])
{
    uint8_t b[DL_AUTH_NONCE_LEN];
    crypto_init();
    if (RAND_bytes(b, sizeof(b)) != 1) {
        dl_log_error("no random bytes for a nonce from OpenSSL");
        return DL_ERR_SYSTEM;
    }
    to_hex(b, sizeof(b), out);
    return DL_OK;
}

dl_status_t dl_auth_new_nonce(char out[DL_AUTH_HEX_LEN])
{
    return random_hex(out);
}

dl_status_t dl_auth_new_token(char out[DL_AUTH_HEX_LEN])
{
    return random_hex(out);
}

void dl_auth_mac(const char *token, const char *side, const char *server_nonce,
                 const char *client_nonce, char out[DL_AUTH_HEX_LEN])
{
    /* The fields are joined with '|', which none of them (hex, a fixed word)
     * contains, so no two different inputs give the same message. */
    size_t n = strlen(side) + strlen(server_nonce) + strlen(client_nonce) + 3;
    char *msg = malloc(n);
    uint8_t mac[EVP_MAX_MD_SIZE];
    unsigned mac_len = 0;
    if (msg == NULL) {
        out[0] = '\0';
        return;
    }
    snprintf(msg, n, "%s|%s|%s", side, server_nonce, client_nonce);
    crypto_init();
    if (HMAC(EVP_sha256(), token, (int)strlen(token), (const uint8_t *)msg, strlen(msg), mac,
             &mac_len) == NULL ||
        mac_len != DL_AUTH_MAC_LEN)
        out[0] = '\0';
    else
        to_hex(mac, mac_len, out);
    free(msg);
}

bool dl_auth_check(const char *token, const char *side, const char *server_nonce,
                   const char *client_nonce, const char *mac)
{
    char want[DL_AUTH_HEX_LEN];
    if (mac == NULL || strlen(mac) != DL_AUTH_HEX_LEN - 1)
        return false;
    dl_auth_mac(token, side, server_nonce, client_nonce, want);
    if (want[0] == '\0')
        return false;
    return CRYPTO_memcmp(want, mac, DL_AUTH_HEX_LEN - 1) == 0;
}

json_t *dl_auth_challenge(const char *server_nonce)
{
    return json_pack("{s:s, s:s}", "type", "challenge", "nonce", server_nonce);
}

/* A nonce as the peer sent it: exactly the hex length, or refused. */
static const char *nonce_field(const json_t *msg, const char *key)
{
    const char *v = json_string_value(json_object_get(msg, key));
    if (v == NULL || strlen(v) != DL_AUTH_HEX_LEN - 1 ||
        strspn(v, "0123456789abcdef") != DL_AUTH_HEX_LEN - 1)
        return NULL;
    return v;
}

json_t *dl_auth_answer(const char *token, const char *server_nonce, const json_t *auth_msg)
{
    const char *type = json_string_value(json_object_get(auth_msg, "type"));
    const char *cn = nonce_field(auth_msg, "nonce");
    const char *mac = json_string_value(json_object_get(auth_msg, "mac"));
    if (type == NULL || strcmp(type, "auth") != 0 || cn == NULL ||
        strcmp(cn, server_nonce) == 0 || /* a reflected challenge */
        !dl_auth_check(token, "client", server_nonce, cn, mac))
        return NULL;
    char proof[DL_AUTH_HEX_LEN];
    dl_auth_mac(token, "server", server_nonce, cn, proof);
    return json_pack("{s:s, s:s}", "type", "welcome", "mac", proof);
}

dl_status_t dl_auth_client_fd(int fd, const char *token, const json_t *extra, int timeout_ms,
                              json_t **welcome_p)
{
    dl_frame_t f = {0};
    dl_status_t st;
    if ((st = dl_frame_recv_fd(fd, &f, timeout_ms)) != DL_OK)
        return st;
    const char *type = json_string_value(json_object_get(f.json, "type"));
    const char *sn = nonce_field(f.json, "nonce");
    if (type == NULL || strcmp(type, "challenge") != 0 || sn == NULL) {
        dl_frame_clear(&f);
        return DL_ERR_PROTOCOL;
    }
    char server_nonce[DL_AUTH_HEX_LEN], cn[DL_AUTH_HEX_LEN] = "", mac[DL_AUTH_HEX_LEN];
    snprintf(server_nonce, sizeof(server_nonce), "%s", sn);
    dl_frame_clear(&f);
    json_t *msg = extra != NULL ? json_deep_copy(extra) : json_object();
    if (msg == NULL)
        return DL_ERR_NOMEM;
    json_object_set_new(msg, "type", json_string("auth"));
    if (token != NULL) {
        if ((st = dl_auth_new_nonce(cn)) != DL_OK) {
            json_decref(msg);
            return st;
        }
        dl_auth_mac(token, "client", server_nonce, cn, mac);
        json_object_set_new(msg, "nonce", json_string(cn));
        json_object_set_new(msg, "mac", json_string(mac));
    }
    st = dl_frame_send_fd(fd, msg, NULL, 0, timeout_ms);
    json_decref(msg);
    if (st != DL_OK)
        return st;
    if ((st = dl_frame_recv_fd(fd, &f, timeout_ms)) != DL_OK)
        /* A server that does not like the MAC closes the connection. */
        return st == DL_ERR_CLOSED ? DL_ERR_DENIED : st;
    type = json_string_value(json_object_get(f.json, "type"));
    const char *proof = json_string_value(json_object_get(f.json, "mac"));
    if (type == NULL || strcmp(type, "welcome") != 0 ||
        (token != NULL && !dl_auth_check(token, "server", server_nonce, cn, proof))) {
        dl_frame_clear(&f);
        return DL_ERR_DENIED;
    }
    if (welcome_p != NULL)
        *welcome_p = json_incref(f.json);
    dl_frame_clear(&f);
    return DL_OK;
}

dl_status_t dl_auth_read_token_file(const char *path, char **token_p, char *err, size_t err_cap)
{
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        snprintf(err, err_cap, "cannot read token file %s: %s", path, strerror(errno));
        return DL_ERR_IO;
    }
    struct stat sb;
    if (fstat(fileno(fp), &sb) == 0 && (sb.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
        snprintf(err, err_cap, "token file %s is readable by others (mode %03o): chmod 600 it",
                 path, (unsigned)(sb.st_mode & 0777));
        fclose(fp);
        return DL_ERR_DENIED;
    }
    char line[512] = "";
    if (fgets(line, sizeof(line), fp) == NULL)
        line[0] = '\0';
    fclose(fp);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' ||
                     line[n - 1] == '\t'))
        line[--n] = '\0';
    const char *start = line + strspn(line, " \t");
    if (strlen(start) < DL_AUTH_TOKEN_MIN) {
        snprintf(err, err_cap, "token in %s is too short (at least %d characters)", path,
                 DL_AUTH_TOKEN_MIN);
        return DL_ERR_DENIED;
    }
    if ((*token_p = strdup(start)) == NULL)
        return DL_ERR_NOMEM;
    return DL_OK;
}
