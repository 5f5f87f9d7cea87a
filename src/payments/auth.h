/*
 * auth.h: who is calling.  The principal is the idempotency scope.
 *
 * REMOTE_USER, when the web server authenticated the request, is the
 * principal.  Otherwise "Authorization: Bearer <api key>" is checked
 * against a keys file that holds only SHA-256 digests of the secrets:
 *
 *     # account   sha256(secret) in hex
 *     acct_alice  9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
 *
 * Digests are compared in constant time, and every entry is compared, so
 * the time taken says nothing about which entry matched.  Nothing the
 * client sends other than the secret itself can choose the scope.
 */
#ifndef PAY_AUTH_H
#define PAY_AUTH_H

#include <stddef.h>

#define AUTH_PRINCIPAL_MAX 64

struct auth_keys;

/*
 * Loads the keys file at path.  A missing file is an empty set (only
 * REMOTE_USER can authenticate then).  Malformed lines are an error naming
 * the line, written to err.
 */
int auth_keys_load(const char *path, struct auth_keys **out, char *err,
    size_t errlen);
void auth_keys_free(struct auth_keys *k);

enum auth_status {
	AUTH_OK = 0,
	AUTH_MISSING,  /* no REMOTE_USER and no Authorization */
	AUTH_INVALID,  /* malformed header, unknown key or bad principal name */
	AUTH__MAX
};

/*
 * Decides the principal from remote_user and the Authorization field
 * (either may be NULL) and writes it, NUL-terminated, to principal.  A
 * principal is 1..AUTH_PRINCIPAL_MAX characters of [A-Za-z0-9._@-].
 */
enum auth_status auth_principal(const struct auth_keys *k,
    const char *remote_user, const char *authorization,
    char principal[AUTH_PRINCIPAL_MAX + 1]);

#endif
