/* SPDX-License-Identifier: MIT */
/*
 * auth.c: the principal, from a Bearer API key or from REMOTE_USER,
 * whichever the configured mode names (auth.h).
 *
 * The keys file holds SHA-256 digests of the secrets, never the secrets,
 * so reading it does not let anyone call the API.  A presented secret is
 * hashed and compared with every digest in constant time; the loop does
 * not stop at a match, so timing does not reveal which entry (or whether
 * an early one) matched.
 *
 * Each thread remembers the last secret it authenticated and the entry it
 * named (auth_cache): a client sends the same key on every request, and
 * a thread mostly serves the same few clients, so the hash and the scan
 * are skipped when the secret is the one remembered.  The comparison is
 * in constant time over a fixed window, so it says nothing about how
 * much of a wrong secret matched, only whether the whole secret is the
 * remembered one, which only its holder can send.  Only secrets that
 * authenticated are remembered, and the memory names the key set (its
 * generation) it was found in, so a set loaded anew starts cold.  The
 * remembered secret is wiped when replaced and when the thread exits.
 */
#include <sys/types.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "crypto.h"
#include "file.h"
#include "idem.h"

/*
 * The longest Bearer token considered.  Real API keys are far shorter;
 * the bound keeps a hostile header from costing more than one small hash.
 */
#define AUTH_TOKEN_MAX 1024

struct auth_entry {
	char account[AUTH_PRINCIPAL_MAX + 1];
	uint8_t digest[CRYPTO_SHA256_SIZE];
};

struct auth_keys {
	struct auth_entry *v;
	size_t n;
	size_t cap;
	uint64_t gen;      /* unique to this load, for auth_cache */
};

/*
 * The longest secret a thread remembers; longer ones (real keys are far
 * shorter) are hashed every time.  The window is compared whole, so its
 * size, not the secret's, sets the time a comparison takes.
 */
#define AUTH_CACHE_TOKEN 64

/* The last secret this thread authenticated, and what it named. */
struct auth_cache {
	uint64_t gen;      /* of the key set it was found in; 0: empty */
	size_t index;      /* its entry in that set */
	size_t len;        /* its length */
	uint8_t tok[AUTH_CACHE_TOKEN];  /* the secret, zero-padded */
};

static _Atomic uint64_t auth_generation;
static _Thread_local struct auth_cache auth_cache;

/*
 * A principal is 1..AUTH_PRINCIPAL_MAX characters of [A-Za-z0-9._@-]:
 * enough for account names and e-mail-like REMOTE_USER values, and
 * nothing that could confuse a log line or the store's key layout.
 */
static int
auth_valid_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '@' ||
	    c == '-';
}

static int
auth_valid_principal(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > AUTH_PRINCIPAL_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!auth_valid_char(s[i]))
			return 0;
	return 1;
}

int
auth_principal_valid(const char *s)
{
	return s != NULL && auth_valid_principal(s, strlen(s));
}

static const char *const auth_modestr[AUTH_MODE__MAX] = {
	[AUTH_MODE_BEARER] = "bearer",
	[AUTH_MODE_REMOTE_USER] = "remote-user",
};

int
auth_mode_parse(const char *s, enum auth_mode *mode)
{
	int i;

	if (s == NULL)
		return IDEM_EINVAL;
	for (i = 0; i < AUTH_MODE__MAX; i++)
		if (strcmp(s, auth_modestr[i]) == 0) {
			*mode = (enum auth_mode)i;
			return IDEM_OK;
		}
	return IDEM_EINVAL;
}

const char *
auth_mode_name(enum auth_mode mode)
{
	if ((unsigned)mode >= AUTH_MODE__MAX)
		return "unknown";
	return auth_modestr[mode];
}

static int
auth_isspace(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int
auth_keys_add(struct auth_keys *k, const char *account, size_t len,
    const uint8_t digest[CRYPTO_SHA256_SIZE])
{
	struct auth_entry *v;
	size_t cap;

	if (k->n == k->cap) {
		cap = k->cap ? k->cap * 2 : 8;
		if (cap > SIZE_MAX / sizeof(*v))
			return IDEM_ENOMEM;
		if ((v = realloc(k->v, cap * sizeof(*v))) == NULL)
			return IDEM_ENOMEM;
		k->v = v;
		k->cap = cap;
	}
	memcpy(k->v[k->n].account, account, len);
	k->v[k->n].account[len] = '\0';
	memcpy(k->v[k->n].digest, digest, CRYPTO_SHA256_SIZE);
	k->n++;
	return IDEM_OK;
}

/*
 * Parses one line of the keys file into k.  Blank lines and lines whose
 * first non-blank character is '#' are skipped.  A digest that is
 * already listed is refused: one secret must name exactly one account,
 * or the scope would depend on the file's order.
 */
static int
auth_keys_line(struct auth_keys *k, char *line, const char **why)
{
	uint8_t digest[CRYPTO_SHA256_SIZE];
	char *acct, *hex, *end;
	size_t alen, hlen, i;

	for (acct = line; auth_isspace(*acct); acct++)
		continue;
	if (*acct == '\0' || *acct == '#')
		return IDEM_OK;
	for (end = acct; *end != '\0' && !auth_isspace(*end); end++)
		continue;
	alen = (size_t)(end - acct);
	for (hex = end; auth_isspace(*hex); hex++)
		continue;
	for (end = hex; *end != '\0' && !auth_isspace(*end); end++)
		continue;
	hlen = (size_t)(end - hex);
	while (auth_isspace(*end))
		end++;

	if (!auth_valid_principal(acct, alen)) {
		*why = "invalid account name (" AUTH_PRINCIPAL_RULE ")";
		return IDEM_EINVAL;
	}
	if (hlen != 2 * CRYPTO_SHA256_SIZE ||
	    crypto_unhex(hex, digest, CRYPTO_SHA256_SIZE) != IDEM_OK) {
		*why = "expected 64 hex digits of SHA-256 after the account";
		return IDEM_EINVAL;
	}
	if (*end != '\0') {
		*why = "unexpected text after the digest";
		return IDEM_EINVAL;
	}
	for (i = 0; i < k->n; i++)
		if (memcmp(k->v[i].digest, digest, sizeof(digest)) == 0) {
			*why = "digest already listed for another entry";
			return IDEM_EINVAL;
		}
	return auth_keys_add(k, acct, alen, digest);
}

/*
 * On success *out is a new key set owned by the caller (auth_keys_free).
 * On failure err names the file and line, and *out is untouched.
 */
int
auth_keys_load(const char *path, struct auth_keys **out, char *err,
    size_t errlen)
{
	struct auth_keys *k;
	FILE *f = NULL;
	char *line = NULL;
	size_t linecap = 0, lineno = 0;
	const char *why;
	ssize_t n;
	int fd, rc;

	if (errlen > 0)
		err[0] = '\0';
	if ((k = calloc(1, sizeof(*k))) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		return IDEM_ENOMEM;
	}
	k->gen = atomic_fetch_add(&auth_generation, 1) + 1;
	if ((fd = file_open_regular(path)) == FILE_NOT_REGULAR) {
		snprintf(err, errlen, "%s: not a regular file (a FIFO, a "
		    "device or a directory)", path);
		rc = IDEM_EINVAL;
		goto fail;
	}
	if (fd == -1 && errno == ENOENT) {
		rc = IDEM_OK;
		goto done;
	}
	if (fd == -1 || (f = fdopen(fd, "r")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		rc = IDEM_EIO;
		goto fail;
	}
	while ((n = getline(&line, &linecap, f)) != -1) {
		lineno++;
		why = "out of memory";
		if (strlen(line) != (size_t)n) {
			why = "NUL byte in line";
			rc = IDEM_EINVAL;
		} else
			rc = auth_keys_line(k, line, &why);
		if (rc != IDEM_OK) {
			snprintf(err, errlen, "%s:%zu: %s", path, lineno, why);
			goto fail;
		}
	}
	/* getline gives -1 both at the end and on an error; tell them apart. */
	if (!feof(f)) {
		rc = errno == ENOMEM ? IDEM_ENOMEM : IDEM_EIO;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	rc = IDEM_OK;
done:
	*out = k;
	k = NULL;
fail:
	free(line);
	if (f != NULL)
		fclose(f);
	auth_keys_free(k);
	return rc;
}

void
auth_keys_free(struct auth_keys *k)
{
	if (k == NULL)
		return;
	/* The digests are not secrets, but there is no reason to leave them. */
	if (k->v != NULL)
		memset(k->v, 0, k->n * sizeof(*k->v));
	free(k->v);
	free(k);
}

/* RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" /
 * "~" / "+" / "/" ) *"=". */
static int
auth_b64token_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~' || c == '+' || c == '/';
}

/*
 * Finds the token in an Authorization field value of the form
 *     credentials = "Bearer" 1*SP b64token            (RFC 6750 2.1)
 * The scheme is matched case-insensitively (RFC 9110 section 11.1).
 * Optional white space around the whole value is tolerated, since RFC
 * 9110 section 5.5 excludes it from the field value and not every
 * gateway strips it.  Returns 0 with *tok and *toklen set, or -1.
 */
static int
auth_bearer_token(const char *h, const char **tok, size_t *toklen)
{
	static const char scheme[] = "bearer";
	const char *p, *t;
	size_t i;

	while (*h == ' ' || *h == '\t')
		h++;
	for (i = 0; i < sizeof(scheme) - 1; i++) {
		if (h[i] == '\0' || (h[i] | 0x20) != scheme[i])
			return -1;
	}
	p = h + i;
	if (*p != ' ')
		return -1;
	while (*p == ' ')
		p++;
	for (t = p; auth_b64token_char(*p); p++)
		continue;
	if (p == t)
		return -1;
	while (*p == '=')
		p++;
	*toklen = (size_t)(p - t);
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != '\0' || *toklen > AUTH_TOKEN_MAX)
		return -1;
	*tok = t;
	return 0;
}

/*
 * Compares digest with every entry, in time that depends only on the
 * number of entries.  Returns the index of the match, or k->n.  Digests
 * are unique (auth_keys_line), so at most one entry can match.
 */
static size_t
auth_keys_find(const struct auth_keys *k,
    const uint8_t digest[CRYPTO_SHA256_SIZE])
{
	size_t i, found, mask;

	found = k->n;
	for (i = 0; i < k->n; i++) {
		mask = (size_t)0 - (size_t)(crypto_equal(k->v[i].digest,
		    digest, CRYPTO_SHA256_SIZE) != 0);
		found = (found & ~mask) | (i & mask);
	}
	return found;
}

/*
 * The web server authenticated the request and says who it is.  The
 * name is checked all the same: it becomes a scope and a log field.
 */
static enum auth_status
auth_remote_user(const char *remote_user,
    char principal[AUTH_PRINCIPAL_MAX + 1])
{
	size_t len;

	/* CGI gives an absent variable and an empty one the same meaning. */
	if (remote_user == NULL || remote_user[0] == '\0')
		return AUTH_MISSING;
	len = strlen(remote_user);
	if (!auth_valid_principal(remote_user, len))
		return AUTH_INVALID;
	memcpy(principal, remote_user, len + 1);
	return AUTH_OK;
}

/*
 * The entry of the remembered secret when tok is that secret and k the
 * set it was found in, else k->n.  win is tok zero-padded to the window
 * (len is at most AUTH_CACHE_TOKEN); the window and the length are
 * compared whole, whatever the outcome.
 */
static size_t
auth_cache_find(const struct auth_keys *k, const uint8_t *win, size_t len)
{
	const struct auth_cache *c = &auth_cache;
	int same;

	if (c->gen != k->gen)
		return k->n;
	same = crypto_equal(c->tok, win, sizeof(c->tok));
	same &= c->len == len;
	return same && c->index < k->n ? c->index : k->n;
}

/* Remembers a secret that named entry i of k, wiping the one before. */
static void
auth_cache_put(const struct auth_keys *k, const uint8_t *win, size_t len,
    size_t i)
{
	struct auth_cache *c = &auth_cache;

	if (crypto_wipe_at_exit(c, sizeof(*c)) != 0)
		return;         /* could not be wiped at exit: not kept */
	crypto_wipe(c, sizeof(*c));
	memcpy(c->tok, win, sizeof(c->tok));
	c->len = len;
	c->index = i;
	c->gen = k->gen;
}

static enum auth_status
auth_bearer(const struct auth_keys *k, const char *authorization,
    char principal[AUTH_PRINCIPAL_MAX + 1])
{
	uint8_t digest[CRYPTO_SHA256_SIZE], win[AUTH_CACHE_TOKEN];
	const char *tok;
	size_t len, i;
	int cacheable;

	if (authorization == NULL || authorization[0] == '\0')
		return AUTH_MISSING;
	if (auth_bearer_token(authorization, &tok, &len) != 0)
		return AUTH_INVALID;
	if (k == NULL)
		return AUTH_INVALID;
	i = k->n;
	if ((cacheable = len <= sizeof(win))) {
		memset(win, 0, sizeof(win));
		memcpy(win, tok, len);
		i = auth_cache_find(k, win, len);
	}
	if (i == k->n) {
		crypto_sha256(tok, len, digest);
		if ((i = auth_keys_find(k, digest)) != k->n && cacheable)
			auth_cache_put(k, win, len, i);
	}
	if (cacheable)
		crypto_wipe(win, sizeof(win));
	if (i == k->n)
		return AUTH_INVALID;
	memcpy(principal, k->v[i].account, sizeof(k->v[i].account));
	return AUTH_OK;
}

enum auth_status
auth_principal(const struct auth_keys *k, enum auth_mode mode,
    const char *remote_user, const char *authorization,
    char principal[AUTH_PRINCIPAL_MAX + 1])
{
	principal[0] = '\0';

	/*
	 * One source of identity per deployment, never a fallback from one
	 * to the other: REMOTE_USER is only as good as the server that set
	 * it, and a server that authenticated nobody may still have copied
	 * it from the client's Basic credentials (nginx's $remote_user).
	 */
	switch (mode) {
	case AUTH_MODE_REMOTE_USER:
		return auth_remote_user(remote_user, principal);
	case AUTH_MODE_BEARER:
		return auth_bearer(k, authorization, principal);
	default:
		return AUTH_INVALID;
	}
}
