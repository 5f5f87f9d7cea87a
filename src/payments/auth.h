/* SPDX-License-Identifier: MIT */
/*
 * auth.h: who is calling.  The principal is the idempotency scope.
 *
 * Where the principal comes from is the deployment's decision, made once
 * in the configuration (IDEM_AUTH), never inferred from the request:
 *
 *   bearer       "Authorization: Bearer <api key>" is checked against a
 *                keys file; REMOTE_USER is ignored whatever it holds,
 *                since a web server that did not authenticate the
 *                request may still fill it from the client's own
 *                Authorization header (nginx's $remote_user does).
 *   remote-user  the web server authenticated the request and names the
 *                principal in REMOTE_USER; the Authorization field is
 *                not consulted (it holds the credentials the server just
 *                checked).
 *
 * The keys file holds only SHA-256 digests of the secrets:
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
/*
 * The one rule for an account name, in the keys file, in idemctl
 * new-key, in REMOTE_USER and in IDEM_METRICS_ACCOUNT, as messages state
 * it (AUTH_PRINCIPAL_MAX characters at most).
 */
#define AUTH_PRINCIPAL_RULE "1 to 64 of A-Z a-z 0-9 . _ @ -"

struct auth_keys;

enum auth_mode {
	AUTH_MODE_BEARER = 0,     /* "bearer", the default */
	AUTH_MODE_REMOTE_USER,    /* "remote-user" */
	AUTH_MODE__MAX
};

/*
 * Sets *mode from its name ("bearer", "remote-user").  Returns IDEM_OK,
 * or IDEM_EINVAL for any other string (NULL included).
 */
int auth_mode_parse(const char *s, enum auth_mode *mode);

/* The name of mode, a static string. */
const char *auth_mode_name(enum auth_mode mode);

/*
 * Returns 1 if s is a well-formed principal: 1..AUTH_PRINCIPAL_MAX
 * characters of [A-Za-z0-9._@-].  NULL is not.
 */
int auth_principal_valid(const char *s);

/*
 * Loads the keys file at path.  A missing file is an empty set (no API
 * key authenticates then).  Malformed lines are an error naming
 * the line, written to err.
 */
int auth_keys_load(const char *path, struct auth_keys **out, char *err,
    size_t errlen);
void auth_keys_free(struct auth_keys *k);

enum auth_status {
	AUTH_OK = 0,
	AUTH_MISSING,  /* no credentials of the mode's kind (absent or empty) */
	AUTH_INVALID,  /* malformed header, unknown key or bad principal name */
	AUTH__MAX
};

/*
 * Decides the principal under mode and writes it, NUL-terminated, to
 * principal (an empty string unless AUTH_OK).  In AUTH_MODE_BEARER only
 * authorization counts (k may be NULL: no key is valid then); in
 * AUTH_MODE_REMOTE_USER only remote_user does (k is not used).  Either
 * string may be NULL; an empty one counts as absent, as in CGI.
 */
enum auth_status auth_principal(const struct auth_keys *k,
    enum auth_mode mode, const char *remote_user, const char *authorization,
    char principal[AUTH_PRINCIPAL_MAX + 1]);

#endif
