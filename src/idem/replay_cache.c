/* SPDX-License-Identifier: MIT */
/*
 * replay_cache.c: completed answers in memory (replay_cache.h).
 *
 * A chained hash table of entries, each also on a list from the most
 * recently used to the least; an entry is one allocation: its record's
 * fixed fields, its names (scope NUL key NUL) and its response as
 * rec_response_pack encodes it.  The bytes an entry costs are all of
 * that allocation; the table of chains, one pointer per 512 bytes of
 * budget, is allocated once beside it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "crypto.h"
#include "idem.h"
#include "record.h"
#include "replay_cache.h"

#define RCACHE_BYTES_PER_CHAIN 512
#define RCACHE_CHAINS_MIN 16
#define RCACHE_CHAINS_MAX (1u << 20)

struct rc_entry {
	struct rc_entry *chain;         /* the next in its hash chain */
	struct rc_entry *newer, *older; /* the use list */
	uint64_t hash;
	size_t cost;
	struct rec meta;                /* no cp, no response, no mem */
	size_t namelen;                 /* scope NUL key NUL */
	size_t packlen;
	unsigned char data[];           /* the names, then the response */
};

struct rcache {
	pthread_mutex_t mu;
	size_t budget;
	size_t used;
	size_t nchains;                 /* a power of two */
	struct rc_entry **chains;
	struct rc_entry *newest, *oldest;
	uint8_t hkey[CRYPTO_SIPHASH_KEY_SIZE];
};

int
rcache_new(size_t bytes, struct rcache **out)
{
	struct rcache *cache;
	size_t n = RCACHE_CHAINS_MIN;

	*out = NULL;
	if (bytes == 0)
		return IDEM_OK;
	while (n < RCACHE_CHAINS_MAX && n < bytes / RCACHE_BYTES_PER_CHAIN)
		n *= 2;
	if ((cache = calloc(1, sizeof(*cache))) == NULL)
		return IDEM_ENOMEM;
	if ((cache->chains = calloc(n, sizeof(*cache->chains))) == NULL ||
	    pthread_mutex_init(&cache->mu, NULL) != 0) {
		free(cache->chains);
		free(cache);
		return IDEM_ENOMEM;
	}
	cache->budget = bytes;
	cache->nchains = n;
	crypto_random(cache->hkey, sizeof(cache->hkey));
	*out = cache;
	return IDEM_OK;
}

void
rcache_free(struct rcache *cache)
{
	struct rc_entry *e, *next;

	if (cache == NULL)
		return;
	for (e = cache->newest; e != NULL; e = next) {
		next = e->older;
		free(e);
	}
	pthread_mutex_destroy(&cache->mu);
	free(cache->chains);
	free(cache);
}

/* scope NUL key NUL, as entries keep them, into names. */
static int
rcache_names(const char *scope, const char *key, struct buf *names)
{
	if (buf_append(names, scope, strlen(scope) + 1) != IDEM_OK ||
	    buf_append(names, key, strlen(key) + 1) != IDEM_OK)
		return IDEM_ENOMEM;
	return IDEM_OK;
}

/* The entry of names, or NULL; *link, where it hangs.  Under mu. */
static struct rc_entry *
rcache_find(struct rcache *cache, const struct buf *names, uint64_t hash,
    struct rc_entry ***link)
{
	struct rc_entry **p, *e;

	p = &cache->chains[hash & (cache->nchains - 1)];
	for (; (e = *p) != NULL; p = &e->chain)
		if (e->hash == hash && e->namelen == names->len &&
		    memcmp(e->data, names->data, names->len) == 0)
			break;
	*link = p;
	return e;
}

static void
rcache_unlist(struct rcache *cache, struct rc_entry *e)
{
	if (e->newer != NULL)
		e->newer->older = e->older;
	else
		cache->newest = e->older;
	if (e->older != NULL)
		e->older->newer = e->newer;
	else
		cache->oldest = e->newer;
	e->newer = e->older = NULL;
}

static void
rcache_list_newest(struct rcache *cache, struct rc_entry *e)
{
	e->older = cache->newest;
	e->newer = NULL;
	if (cache->newest != NULL)
		cache->newest->newer = e;
	else
		cache->oldest = e;
	cache->newest = e;
}

/* Unhangs e (at *link) and frees it.  Under mu. */
static void
rcache_drop(struct rcache *cache, struct rc_entry **link, struct rc_entry *e)
{
	*link = e->chain;
	rcache_unlist(cache, e);
	cache->used -= e->cost;
	free(e);
}

/* Drops the least recently used entry.  Under mu, with one at least. */
static void
rcache_evict(struct rcache *cache)
{
	struct rc_entry *e = cache->oldest, **p;

	p = &cache->chains[e->hash & (cache->nchains - 1)];
	while (*p != e)
		p = &(*p)->chain;
	rcache_drop(cache, p, e);
}

int
rcache_get(struct rcache *cache, const char *scope, const char *key,
    uint64_t now_ms, struct rec *r, void **mem)
{
	struct buf names = BUF_INIT;
	struct rc_entry *e, **link;
	struct rec_response resp;
	uint64_t hash;
	int rc;

	memset(r, 0, sizeof(*r));
	*mem = NULL;
	if (cache == NULL)
		return IDEM_ENOTFOUND;
	if ((rc = rcache_names(scope, key, &names)) != IDEM_OK)
		goto out;
	hash = crypto_siphash(cache->hkey, names.data, names.len);
	pthread_mutex_lock(&cache->mu);
	if ((e = rcache_find(cache, &names, hash, &link)) == NULL)
		rc = IDEM_ENOTFOUND;
	else if (e->meta.expires_ms <= now_ms) {
		/* engine_expired's rule for a completed record. */
		rcache_drop(cache, link, e);
		rc = IDEM_ENOTFOUND;
	} else if ((rc = rec_response_unpack(e->data + e->namelen,
	    e->packlen, &resp, mem)) == IDEM_OK) {
		*r = e->meta;
		r->resp = resp;
		rcache_unlist(cache, e);
		rcache_list_newest(cache, e);
	}
	pthread_mutex_unlock(&cache->mu);
out:
	buf_free(&names);
	if (rc != IDEM_OK) {
		free(*mem);
		*mem = NULL;
		memset(r, 0, sizeof(*r));
	}
	return rc;
}

/* A new entry for names and r's response, allocated outside mu. */
static struct rc_entry *
rcache_entry(const struct buf *names, const struct rec *r)
{
	struct buf pack = BUF_INIT;
	struct rc_entry *e = NULL;
	size_t cost;

	if (rec_response_pack(&r->resp, &pack) != IDEM_OK)
		goto out;
	cost = sizeof(*e) + names->len + pack.len;
	if ((e = malloc(cost)) == NULL)
		goto out;
	memset(e, 0, sizeof(*e));
	e->cost = cost;
	e->meta = *r;
	e->meta.cp = NULL;
	e->meta.cplen = 0;
	memset(&e->meta.resp, 0, sizeof(e->meta.resp));
	e->meta.mem = NULL;
	e->namelen = names->len;
	e->packlen = pack.len;
	memcpy(e->data, names->data, names->len);
	memcpy(e->data + names->len, pack.data, pack.len);
out:
	buf_free(&pack);
	return e;
}

void
rcache_put(struct rcache *cache, const char *scope, const char *key,
    const struct rec *r)
{
	struct buf names = BUF_INIT;
	struct rc_entry *e, *old, **link;

	if (cache == NULL || r->state != REC_COMPLETED ||
	    rcache_names(scope, key, &names) != IDEM_OK)
		goto out;
	if ((e = rcache_entry(&names, r)) == NULL)
		goto out;
	if (e->cost > cache->budget) {
		free(e);
		goto out;
	}
	e->hash = crypto_siphash(cache->hkey, names.data, names.len);
	pthread_mutex_lock(&cache->mu);
	if ((old = rcache_find(cache, &names, e->hash, &link)) != NULL)
		rcache_drop(cache, link, old);
	while (cache->used + e->cost > cache->budget)
		rcache_evict(cache);
	link = &cache->chains[e->hash & (cache->nchains - 1)];
	e->chain = *link;
	*link = e;
	rcache_list_newest(cache, e);
	cache->used += e->cost;
	pthread_mutex_unlock(&cache->mu);
out:
	buf_free(&names);
}

size_t
rcache_bytes(struct rcache *cache)
{
	size_t n;

	if (cache == NULL)
		return 0;
	pthread_mutex_lock(&cache->mu);
	n = cache->used;
	pthread_mutex_unlock(&cache->mu);
	return n;
}
