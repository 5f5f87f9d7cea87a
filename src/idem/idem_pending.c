/* SPDX-License-Identifier: MIT */
/*
 * idem_pending.c: the walk of claims in progress (idem.h,
 * idem_pending_each), for a completer.  It reads the store below the
 * keyed calls (store_each, store_each_pending) and hands out each claim
 * in progress through struct idem_pending, opening its recovery point
 * only when asked: a walk that counts stuck claims opens nothing.
 */
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "idem.h"
#include "idem_int.h"
#include "record.h"
#include "store.h"

struct idem_pending {
	const struct sealer *seal;
	const char *scope;
	const char *key;
	const struct rec *rec;  /* the store's, for this call of fn */
	struct rec open;        /* a copy whose point was opened */
	int opened;             /* 1: open is set; -1: it failed */
	int open_rc;
};

struct idem_walk {
	const struct sealer *seal;
	idem_pending_fn fn;
	void *ctx;
};

static int
idem_walk_one(void *ctx, const char *scope, const char *key,
    const struct rec *r)
{
	struct idem_walk *w = ctx;
	struct idem_pending p = { w->seal, scope, key, r, { 0 }, 0, IDEM_OK };
	int stop;

	if (r->state != REC_IN_PROGRESS)
		return 0;
	stop = w->fn(w->ctx, &p);
	if (p.opened == 1)
		rec_free(&p.open);
	return stop;
}

int
idem_pending_each(struct idem *idem, enum idem_pending_walk which,
    idem_pending_fn fn, void *ctx)
{
	struct idem_walk w = { idem->seal, fn, ctx };

	if (fn == NULL)
		return IDEM_EINVAL;
	switch (which) {
	case IDEM_PENDING_STARTED:
		return store_each_pending(idem->store, idem_walk_one, &w);
	case IDEM_PENDING_ALL:
		return store_each(idem->store, idem_walk_one, &w);
	default:
		return IDEM_EINVAL;
	}
}

const char *
idem_pending_scope(const struct idem_pending *p)
{
	return p->scope;
}

const char *
idem_pending_key(const struct idem_pending *p)
{
	return p->key;
}

const uint8_t *
idem_pending_fingerprint(const struct idem_pending *p)
{
	return p->rec->fp;
}

uint64_t
idem_pending_lease_ms(const struct idem_pending *p)
{
	return p->rec->lease_ms;
}

uint64_t
idem_pending_expires_ms(const struct idem_pending *p)
{
	return p->rec->expires_ms;
}

uint64_t
idem_pending_created_ms(const struct idem_pending *p)
{
	return p->rec->created_ms;
}

uint32_t
idem_pending_attempts(const struct idem_pending *p)
{
	return p->rec->attempts;
}

uint32_t
idem_pending_stage(const struct idem_pending *p)
{
	return p->rec->stage;
}

/*
 * The point is opened into a copy of the record that borrows the
 * store's bytes until store_unseal_point gives it its own (open.mem):
 * the walk's record stays as the store read it.
 */
int
idem_pending_point(struct idem_pending *p, const void **point, size_t *len)
{
	*point = NULL;
	*len = 0;
	if (p->opened == 0) {
		p->open = *p->rec;
		p->open.mem = NULL;
		p->open_rc = store_unseal_point(p->seal, p->scope, p->key,
		    &p->open);
		p->opened = p->open_rc == IDEM_OK ? 1 : -1;
		if (p->opened == -1)
			rec_free(&p->open);
	}
	if (p->opened == -1)
		return p->open_rc;
	if (p->open.cplen > 0) {
		*point = p->open.cp;
		*len = p->open.cplen;
	}
	return IDEM_OK;
}
