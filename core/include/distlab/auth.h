/* Token authentication for every TCP connection a session accepts: the
 * control port, the rendezvous store and the TCP data transport.
 *
 * The token never crosses the wire. The server sends a random nonce; the
 * client answers with its own nonce and HMAC-SHA256(token, "client" | server
 * nonce | client nonce); the server checks it in constant time and proves it
 * holds the token too with HMAC-SHA256(token, "server" | ...). Fresh nonces on
 * both sides mean a recorded exchange cannot be replayed in either direction.
 *
 * The exchange travels in ordinary frames (frame.h):
 *   server -> {"type":"challenge","nonce":HEX}
 *   client -> {"type":"auth","nonce":HEX,"mac":HEX, ...caller's fields}
 *   server -> {"type":"welcome","mac":HEX, ...} or the connection is closed. */
#ifndef DISTLAB_AUTH_H
#define DISTLAB_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "distlab/status.h"

#define DL_AUTH_NONCE_LEN 32
#define DL_AUTH_MAC_LEN   32
/* Hex text of a nonce or a MAC, with its terminating NUL. */
#define DL_AUTH_HEX_LEN (2 * DL_AUTH_NONCE_LEN + 1)
/* Tokens shorter than this are refused: they could be guessed. */
#define DL_AUTH_TOKEN_MIN 16

/* Fills out with a fresh random nonce, as hex text. */
dl_status_t dl_auth_new_nonce(char out[DL_AUTH_HEX_LEN]);
/* A new random token (hex, 64 characters) for a session. */
dl_status_t dl_auth_new_token(char out[DL_AUTH_HEX_LEN]);

/* The MAC for one side ("client" or "server") as hex text. */
void dl_auth_mac(const char *token, const char *side, const char *server_nonce,
                 const char *client_nonce, char out[DL_AUTH_HEX_LEN]);
/* Whether mac is the MAC side would send; constant time over the MAC. */
bool dl_auth_check(const char *token, const char *side, const char *server_nonce,
                   const char *client_nonce, const char *mac);

/* Server side, in steps so an event loop can drive it. */
json_t *dl_auth_challenge(const char *server_nonce);
/* Checks a client's "auth" frame against the challenge; on success returns
 * the "welcome" frame to send back (the caller may add fields to it). */
json_t *dl_auth_answer(const char *token, const char *server_nonce, const json_t *auth_msg);

/* Client side on a blocking socket: reads the challenge, sends "auth" (with
 * the fields of extra merged in, may be NULL), checks the welcome and hands
 * it back in *welcome_p when asked. DL_ERR_DENIED when the server refused
 * us or could not prove it holds the token. With token NULL (a session
 * without one) the same exchange runs without nonce and MACs. */
dl_status_t dl_auth_client_fd(int fd, const char *token, const json_t *extra, int timeout_ms,
                              json_t **welcome_p);

/* Reads a token file: the first line, whitespace trimmed. Refuses a file
 * that others can read (like ssh does with keys) and a short token, with a
 * message in err. */
dl_status_t dl_auth_read_token_file(const char *path, char **token_p, char *err, size_t err_cap);

#endif
