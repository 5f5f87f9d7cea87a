/* SPDX-License-Identifier: MIT */
/*
 * idemctl_show.c: the commands that read: stats, inspect, stuck, each as
 * "name: value" lines or, with --json, one JSON document (json.c's
 * writer) for scripts and monitoring.  stuck reads through idem.h alone;
 * stats and inspect read the store below it (doc/DESIGN.md says why).
 */
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "fault.h"
#include "idem.h"
#include "idemctl.h"
#include "json.h"
#include "payment.h"
#include "provider.h"
#include "refund.h"

struct ctl_stats {
	size_t keys, completed, in_progress, stuck, pending;
	uint64_t now;
};

static int
ctl_count(void *ctx, const char *scope, const char *key, const struct rec *r)
{
	struct ctl_stats *st = ctx;

	(void)scope;
	(void)key;
	st->keys++;
	if (r->state == REC_COMPLETED)
		st->completed++;
	else {
		st->in_progress++;
		if (r->lease_ms <= st->now)
			st->stuck++;
		if (r->stage != 0)
			st->pending++;
	}
	return 0;
}

int
ctl_stats(int argc, char *argv[])
{
	struct provider_config pc;
	struct ctl_stats st = { 0, 0, 0, 0, 0, clock_now_ms() };
	struct provider *p = NULL;
	struct store *s;
	size_t payments = 0, charges = 0, declines = 0, refunds = 0;
	size_t refunded = 0;
	int rc;

	if (ctl_options(argc, argv, "", NULL, NULL) != argc)
		ctl_usage();
	/* The provider's counts are part of the answer: it must be named. */
	ctl_need_provider();
	config_provider(&ctl_cfg, &pc);
	/* Counting charges neither waits nor fails on purpose. */
	pc.latency_ms = 0;
	pc.fail = PROVIDER_FAIL_NONE;
	pc.commit_delay_us = 0;
	s = ctl_store(0);
	ctl_need_ledger();
	if ((rc = store_each(s, ctl_count, &st)) != IDEM_OK ||
	    (rc = store_count(s, PAY_TABLE_PAYMENTS, &payments)) != IDEM_OK ||
	    (rc = store_count(s, REFUND_TABLE_REFUNDS, &refunds)) != IDEM_OK) {
		fprintf(stderr, "idemctl: %s\n", idem_strerror(rc));
		store_close(s);
		return CTL_FAIL;
	}
	store_close(s);
	if ((rc = provider_open(&pc, &p)) != IDEM_OK ||
	    (rc = provider_count(p, &charges, &declines)) != IDEM_OK ||
	    (rc = provider_count_refunds(p, &refunded)) != IDEM_OK) {
		fprintf(stderr, "idemctl: provider %s: %s\n",
		    pc.url != NULL ? pc.url : ctl_cfg.provider_dir,
		    idem_strerror(rc));
		provider_close(p);	/* NULL when it did not open */
		return CTL_FAIL;
	}
	provider_close(p);
	{
		const struct ctl_field f[] = {
			{ "keys", st.keys }, { "completed", st.completed },
			{ "in_progress", st.in_progress },
			{ "stuck", st.stuck }, { "pending", st.pending },
			{ "payments", payments }, { "charges", charges },
			{ "declines", declines }, { "refunds", refunds },
			{ "provider_refunds", refunded },
		};

		return ctl_print_fields(f, sizeof(f) / sizeof(f[0]), -1);
	}
}

/*
 * What inspect and stuck print of a record: inspect fills it from the
 * store's record, stuck from the public walk of claims (idem.h), so that
 * both print alike.
 */
struct ctl_view {
	int completed;
	uint32_t attempts, stage;
	uint64_t created_ms, expires_ms, lease_ms;
	int status;          /* completed */
	size_t body_bytes;   /* completed */
};

static void
ctl_view_of_rec(const struct rec *r, struct ctl_view *v)
{
	memset(v, 0, sizeof(*v));
	v->completed = r->state == REC_COMPLETED;
	v->attempts = r->attempts;
	v->stage = r->stage;
	v->created_ms = r->created_ms;
	v->expires_ms = r->expires_ms;
	v->lease_ms = r->lease_ms;
	v->status = r->resp.status;
	v->body_bytes = r->resp.bodylen;
}

static const char *
ctl_state(const struct ctl_view *v, uint64_t now)
{
	if (v->completed)
		return "completed";
	return v->lease_ms > now ? "in_progress" : "lease_expired";
}

static void
ctl_show_text(struct buf *b, const char *scope, const char *keyhash,
    const struct ctl_view *v, uint64_t now)
{
	buf_printf(b, "scope: %s\nkeyhash: %s\nstate: %s\nattempts: %u\n"
	    "stage: %u\ncreated_ms: %llu\nexpires_ms: %llu\n", scope, keyhash,
	    ctl_state(v, now), v->attempts, v->stage,
	    (unsigned long long)v->created_ms,
	    (unsigned long long)v->expires_ms);
	if (v->completed)
		buf_printf(b, "status: %d\nbody_bytes: %zu\n", v->status,
		    v->body_bytes);
	else
		buf_printf(b, "lease_ms: %llu\n",
		    (unsigned long long)v->lease_ms);
}

static void
ctl_show_json(struct json_writer *w, const char *scope, const char *keyhash,
    const struct ctl_view *v, uint64_t now)
{
	json_write_open(w, '{');
	json_write_name(w, "scope");
	json_write_str(w, scope);
	json_write_name(w, "keyhash");
	json_write_str(w, keyhash);
	json_write_name(w, "state");
	json_write_str(w, ctl_state(v, now));
	json_write_name(w, "attempts");
	json_write_int(w, v->attempts);
	json_write_name(w, "stage");
	json_write_int(w, v->stage);
	json_write_name(w, "created_ms");
	json_write_int(w, (long long)v->created_ms);
	json_write_name(w, "expires_ms");
	json_write_int(w, (long long)v->expires_ms);
	if (v->completed) {
		json_write_name(w, "status");
		json_write_int(w, v->status);
		json_write_name(w, "body_bytes");
		json_write_int(w, (long long)v->body_bytes);
	} else {
		json_write_name(w, "lease_ms");
		json_write_int(w, (long long)v->lease_ms);
		json_write_name(w, "lease_ended_s_ago");
		json_write_int(w, v->lease_ms <= now ?
		    (long long)((now - v->lease_ms) / 1000) : -1);
	}
	json_write_close(w, '}');
}

int
ctl_inspect(int argc, char *argv[])
{
	char hash[KEYHASH_HEX + 1];
	struct buf b = BUF_INIT;
	struct json_writer w;
	struct ctl_view v;
	struct store *s;
	struct rec r;
	int i, rc;

	i = ctl_options(argc, argv, "", NULL, NULL);
	if (argc - i != 2)
		ctl_usage();
	s = ctl_store(0);
	rc = store_lookup(s, argv[i], argv[i + 1], &r);
	store_close(s);
	if (rc == IDEM_ENOTFOUND) {
		printf(ctl_json ? "{\"state\":\"absent\"}\n" : "absent\n");
		return CTL_ABSENT;
	}
	if (rc != IDEM_OK) {
		fprintf(stderr, "idemctl: %s\n", idem_strerror(rc));
		return CTL_FAIL;
	}
	ctl_keyhash(argv[i], argv[i + 1], hash);
	ctl_view_of_rec(&r, &v);
	rec_free(&r);
	if (ctl_json) {
		json_write_init(&w, &b);
		ctl_show_json(&w, argv[i], hash, &v, clock_now_ms());
		if ((rc = json_write_done(&w)) == IDEM_OK)
			rc = buf_puts(&b, "\n");
	} else {
		ctl_show_text(&b, argv[i], hash, &v, clock_now_ms());
		rc = IDEM_OK;
	}
	rc = rc == IDEM_OK ? ctl_print(&b) : CTL_FAIL;
	buf_free(&b);
	return rc;
}

struct ctl_stuck {
	uint64_t now;
	struct buf *out;
	struct json_writer w;
};

/* A claim past stage 0 from idem.h's walk, printed when its lease is over. */
static int
ctl_stuck_one(void *ctx, struct idem_pending *p)
{
	struct ctl_stuck *st = ctx;
	char hash[KEYHASH_HEX + 1];
	struct ctl_view v;

	memset(&v, 0, sizeof(v));
	v.attempts = idem_pending_attempts(p);
	v.stage = idem_pending_stage(p);
	v.created_ms = idem_pending_created_ms(p);
	v.expires_ms = idem_pending_expires_ms(p);
	v.lease_ms = idem_pending_lease_ms(p);
	if (v.lease_ms > st->now)
		return 0;
	ctl_keyhash(idem_pending_scope(p), idem_pending_key(p), hash);
	if (ctl_json)
		ctl_show_json(&st->w, idem_pending_scope(p), hash, &v,
		    st->now);
	else
		buf_printf(st->out, "%s %s attempts=%u stage=%u "
		    "lease_ended_s_ago=%llu\n", idem_pending_scope(p), hash,
		    v.attempts, v.stage,
		    (unsigned long long)((st->now - v.lease_ms) / 1000));
	return 0;
}

/*
 * Through idem.h alone: the walk of claims past stage 0 hands out all
 * that a stuck claim's line shows.  No key file is named: the recovery
 * points are not opened.
 */
int
ctl_stuck(int argc, char *argv[])
{
	struct idem_options opt;
	struct buf b = BUF_INIT;
	struct ctl_stuck st;
	struct idem *idem;
	int rc;

	if (ctl_options(argc, argv, "", NULL, NULL) != argc)
		ctl_usage();
	st.now = clock_now_ms();
	st.out = &b;
	json_write_init(&st.w, &b);
	if (ctl_json)
		json_write_open(&st.w, '[');
	ctl_idem_options(&opt);
	opt.secret_file = NULL;
	idem = ctl_idem(&opt);
	rc = idem_pending_each(idem, IDEM_PENDING_STARTED, ctl_stuck_one, &st);
	idem_close(idem);
	if (rc != IDEM_OK) {
		fprintf(stderr, "idemctl: %s\n", idem_strerror(rc));
		buf_free(&b);
		return CTL_FAIL;
	}
	if (ctl_json) {
		json_write_close(&st.w, ']');
		if ((rc = json_write_done(&st.w)) == IDEM_OK)
			rc = buf_puts(&b, "\n");
	}
	rc = rc == IDEM_OK ? ctl_print(&b) : CTL_FAIL;
	buf_free(&b);
	return rc;
}

/*
 * The key as the responder's log names it (keyhash.h), so an operator
 * can find its lines; "-" when no worker has made the secret yet.  The
 * secret is only read here: created by idemctl running as another user,
 * it would lock the workers out of it.
 */
void
ctl_keyhash(const char *scope, const char *key, char out[KEYHASH_HEX + 1])
{
	static struct keyhash kh;
	static int loaded = -1;
	uint8_t secret[KEYHASH_SECRET_SIZE];
	char err[64];

	if (loaded == -1 && (loaded = keyhash_secret_load(ctl_cfg.db_dir, 0,
	    secret, err, sizeof(err)) == 0))
		keyhash_init(&kh, secret);
	if (loaded)
		keyhash_compute(&kh, scope, key, out);
	else
		snprintf(out, KEYHASH_HEX + 1, "-");
}
