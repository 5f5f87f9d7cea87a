/* SPDX-License-Identifier: MIT */
/*
 * store_pg_sync.c: the PostgreSQL store refuses a session whose commits
 * would not wait for a synchronous standby (doc/DESIGN.md, invariant 11).
 *
 * A commit on a primary returns once its own disk has it; a standby
 * has it only if the primary waited for one, which it does when
 * synchronous_standby_names names standbys and the session's
 * synchronous_commit is on (or remote_apply).  Otherwise a payment
 * answered 201 can be gone after a failover to an asynchronous standby.
 * So every session the store opens (at open, in the pool, for a lost
 * COMMIT's read-back) is checked before any call uses it, and again
 * when a call takes it from the pool PG_SYNC_CHECK_MS or more after its
 * last check (pg_sync_recheck; doc/DESIGN.md, "Stale primaries
 * refused"), and refused with IDEM_EUNSAFE when:
 *
 *	- its synchronous_commit is neither on nor remote_apply;
 *	- synchronous_standby_names is empty while a standby streams from
 *	  the server: the standby is asynchronous, whatever anyone says;
 *	- synchronous_standby_names is empty and no standby streams,
 *	  unless a single unreplicated server was declared: by the host
 *	  (IDEM_PG_REPLICATION=none) or, when the host leaves it unset,
 *	  by the database (the custom setting idem.replication = 'none',
 *	  in postgresql.conf or ALTER DATABASE ... SET, so that every host
 *	  of the database reads the same).  IDEM_PG_REPLICATION=synchronous
 *	  requires synchronous_standby_names whatever the database says.
 *
 * The last rule is why a single server must be declared: a check at
 * session open cannot tell a server meant to stand alone from a
 * replicated primary whose asynchronous standby is away for a minute
 * (a restart, a re-clone), and sessions last.  Accepting it would let
 * the standby come back asynchronous under sessions already accepted.
 *
 * The same read refuses, with IDEM_EIO, a server that cannot be the
 * primary this process should use: a standby; a primary whose
 * synchronous_standby_names names standbys none of which is
 * synchronous now (its commits would wait; a primary that a failover
 * left behind has lost its standbys to its successor); and a server
 * behind what this process has seen (pg_behind).  Each refusal closes
 * the session, so that the next call's session finds the primary.
 *
 * The check reads settings any role may read; pg_stat_replication shows
 * every role its rows (one per WAL sender) but only roles with the
 * privileges of pg_read_all_stats their columns, so without them a base
 * backup in progress counts as a standby (refused, never wrongly
 * accepted), and whether one is synchronous now is not known (not
 * refused: grant the role pg_read_all_stats for that check).  A read-only store (operators' tools) writes nothing and
 * is not checked.
 */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "err.h"
#include "store_pg.h"

/* Why a session was refused, or accepted: what the log says once. */
enum pg_sync_why {
	PG_SYNC_UNKNOWN,
	PG_SYNC_OK,
	PG_SYNC_COMMIT,         /* synchronous_commit not on/remote_apply */
	PG_SYNC_ASYNC,          /* standbys stream, none is waited for */
	PG_SYNC_UNDECLARED,     /* no standby, no declared single server */
	PG_SYNC_STANDBY,        /* the session is on a standby */
	PG_SYNC_BEHIND,         /* the server lacks what this host saw */
	PG_SYNC_NONE            /* no standby is synchronous now */
};

/*
 * The environment rather than a field of store_config: every program
 * that opens the store (idem-fcgi, idemctl, an application of libidem)
 * reads the same variable, as libpq reads PG*.
 */
int
pg_sync_mode(int *mode)
{
	const char *e = getenv("IDEM_PG_REPLICATION");

	*mode = PG_REPL_AUTO;
	if (e == NULL || *e == '\0')
		return IDEM_OK;
	if (strcmp(e, "synchronous") == 0)
		*mode = PG_REPL_SYNC;
	else if (strcmp(e, "none") == 0)
		*mode = PG_REPL_NONE;
	else {
		fprintf(stderr, "idem: IDEM_PG_REPLICATION must be "
		    "\"synchronous\" or \"none\", not \"%s\"\n", e);
		return IDEM_EINVAL;
	}
	return IDEM_OK;
}

/*
 * Says why once each time the verdict changes, so that a refused store
 * under load logs one line, not one a request; sessions accepted are
 * news only after a refusal (a CGI process opens the store for every
 * request).
 */
static void
pg_sync_log(struct pgstore *s, enum pg_sync_why why, const char *detail)
{
	int was = __atomic_exchange_n(&s->sync_why, (int)why,
	    __ATOMIC_RELAXED);

	if (was == (int)why || (why == PG_SYNC_OK && was == PG_SYNC_UNKNOWN))
		return;
	if (why == PG_SYNC_OK)
		fprintf(stderr, "idem: the PostgreSQL store's commits wait for "
		    "a synchronous standby (%s)\n", detail);
	else
		fprintf(stderr, "idem: the PostgreSQL store refuses the "
		    "session: %s; requests answer 503 until this changes "
		    "(doc/DESIGN.md, invariant 11)\n", detail);
}

/* What one read of a session's server says (pg_sync_read). */
struct pg_server {
	char commit[32];        /* synchronous_commit */
	char names[256];        /* synchronous_standby_names */
	char declared[32];      /* idem.replication */
	long streaming;         /* WAL senders, base backups left out */
	long sync;              /* of them, synchronous now */
	long hidden;            /* of them, whose state this role cannot see */
	int recovery;           /* a standby */
	uint32_t timeline;      /* the primary's, from its WAL file's name */
	uint64_t lsn;           /* the primary's WAL position */
};

/*
 * Reads what pg_sync_check judges, in one round trip within the
 * statement timeout (store_pg_io.c): 0, or -1 when the read failed or
 * its answer did not come.  The timeline is the first field of the
 * name of the WAL file the server writes now (pg_walfile_name), which
 * a promotion moves on at once, where pg_control_checkpoint() waits for
 * the next checkpoint.
 */
static int
pg_sync_read(PGconn *c, unsigned ms, struct pg_server *v)
{
	struct pgwait w;
	PGresult *r;
	int rc = -1;

	pg_wait_init(&w, ms);
	r = pg_exec_by(c, "SELECT current_setting('synchronous_commit'), "
	    "current_setting('synchronous_standby_names'), "
	    "coalesce(current_setting('idem.replication', true), ''), "
	    "(SELECT count(*) FROM pg_stat_replication "
	    "WHERE state IS DISTINCT FROM 'backup'), pg_is_in_recovery(), "
	    "CASE WHEN pg_is_in_recovery() THEN 0 "
	    "ELSE pg_current_wal_lsn() - '0/0' END, "
	    "CASE WHEN pg_is_in_recovery() THEN 0 ELSE ('x' || "
	    "substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))"
	    "::bit(32)::bigint END, "
	    "(SELECT count(*) FROM pg_stat_replication "
	    "WHERE sync_state IN ('sync', 'quorum')), "
	    "(SELECT count(*) FROM pg_stat_replication "
	    "WHERE sync_state IS NULL)", NULL, 0, &w);
	if (r != NULL && PQresultStatus(r) == PGRES_TUPLES_OK &&
	    PQntuples(r) == 1 && PQnfields(r) == 9) {
		snprintf(v->commit, sizeof(v->commit), "%s",
		    PQgetvalue(r, 0, 0));
		snprintf(v->names, sizeof(v->names), "%s", PQgetvalue(r, 0, 1));
		snprintf(v->declared, sizeof(v->declared), "%s",
		    PQgetvalue(r, 0, 2));
		v->streaming = strtol(PQgetvalue(r, 0, 3), NULL, 10);
		v->recovery = strcmp(PQgetvalue(r, 0, 4), "t") == 0;
		v->lsn = strtoull(PQgetvalue(r, 0, 5), NULL, 10);
		v->timeline = (uint32_t)strtoul(PQgetvalue(r, 0, 6), NULL, 10);
		v->sync = strtol(PQgetvalue(r, 0, 7), NULL, 10);
		v->hidden = strtol(PQgetvalue(r, 0, 8), NULL, 10);
		rc = 0;
	}
	PQclear(r);
	return rc;
}

/*
 * Whether the server v read is behind what this process has seen of
 * the store, by marks taken before the read was sent (tl0, lsn0): an
 * older timeline, or on the same timeline a lower WAL position.  The
 * marks are the highest of the sessions this process accepted; a read
 * that completed before this one was sent, on the same primary, saw a
 * position no higher, so a read on the same server is never behind
 * them, whatever other threads read meanwhile.  A newer timeline is a
 * failover's successor, which has every commit acknowledged before it
 * (synchronous replication) though perhaps not every position an old
 * primary had written: it is not behind, and its position starts the
 * marks again.  A primary that a failover left behind (paused or
 * partitioned, then continued) is on an older timeline than its
 * successor, once this process has used the successor.  A server that
 * is not behind raises the marks.
 */
static int
pg_behind(struct pgstore *s, const struct pg_server *v, uint32_t tl0,
    uint64_t lsn0, char *detail, size_t len)
{
	int behind = v->timeline < tl0 ||
	    (v->timeline == tl0 && v->lsn < lsn0);

	if (behind) {
		snprintf(detail, len, "the server is behind what this host "
		    "has seen (timeline %" PRIu32 ", WAL %" PRIu64 "; seen "
		    "timeline %" PRIu32 ", WAL %" PRIu64 "): a primary a "
		    "failover left behind, or a store restored from an older "
		    "copy", v->timeline, v->lsn, tl0, lsn0);
		return 1;
	}
	pthread_mutex_lock(&s->mu);
	if (v->timeline > s->seen_timeline) {
		s->seen_timeline = v->timeline;
		s->seen_lsn = v->lsn;
	} else if (v->timeline == s->seen_timeline && v->lsn > s->seen_lsn)
		s->seen_lsn = v->lsn;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int
pg_sync_check(struct pgstore *s, PGconn *c)
{
	struct pg_server v;
	char detail[512];
	uint32_t tl0;
	uint64_t lsn0;
	int single, rc = IDEM_EUNSAFE;
	enum pg_sync_why why;

	if (s->read_only)
		return IDEM_OK;
	pthread_mutex_lock(&s->mu);
	tl0 = s->seen_timeline;
	lsn0 = s->seen_lsn;
	pthread_mutex_unlock(&s->mu);
	if (pg_sync_read(c, s->lim.statement_ms, &v) != 0)
		return IDEM_EIO;
	single = s->repl == PG_REPL_NONE ||
	    (s->repl == PG_REPL_AUTO && strcmp(v.declared, "none") == 0);
	if (v.recovery) {
		why = PG_SYNC_STANDBY;
		snprintf(detail, sizeof(detail), "the server is a standby "
		    "(in recovery); name the primary, or every node with "
		    "target_session_attrs=read-write");
		rc = IDEM_EIO;
	} else if (pg_behind(s, &v, tl0, lsn0, detail, sizeof(detail))) {
		why = PG_SYNC_BEHIND;
		rc = IDEM_EIO;
	} else if (strcmp(v.commit, "on") != 0 &&
	    strcmp(v.commit, "remote_apply") != 0) {
		why = PG_SYNC_COMMIT;
		snprintf(detail, sizeof(detail), "synchronous_commit is "
		    "\"%s\", so a commit does not wait for its standbys",
		    v.commit);
	} else if (v.names[0] != '\0' && v.hidden == 0 && v.sync == 0) {
		why = PG_SYNC_NONE;
		snprintf(detail, sizeof(detail), "synchronous_standby_names "
		    "is '%s' but no standby is synchronous now (%ld "
		    "stream): commits would wait, or the server is a "
		    "primary a failover left behind", v.names, v.streaming);
		rc = IDEM_EIO;
	} else if (v.names[0] != '\0') {
		why = PG_SYNC_OK;
		snprintf(detail, sizeof(detail), "synchronous_standby_names "
		    "'%s'", v.names);
		rc = IDEM_OK;
	} else if (v.streaming > 0) {
		why = PG_SYNC_ASYNC;
		snprintf(detail, sizeof(detail), "%ld standby(s) stream from "
		    "the primary but synchronous_standby_names is empty: "
		    "commits do not wait for them, and a failover would lose "
		    "acknowledged writes", v.streaming);
	} else if (!single) {
		why = PG_SYNC_UNDECLARED;
		snprintf(detail, sizeof(detail), "synchronous_standby_names "
		    "is empty: commits wait for no standby; for a single "
		    "unreplicated server say so (IDEM_PG_REPLICATION=none, or "
		    "idem.replication = 'none' on the server)");
	} else {
		why = PG_SYNC_OK;
		snprintf(detail, sizeof(detail), "none: a single unreplicated "
		    "server, as declared");
		rc = IDEM_OK;
	}
	pg_sync_log(s, why, detail);
	return rc;
}

/*
 * The check again when a call takes a session that was last checked
 * PG_SYNC_CHECK_MS ago or more (opened: pc's session was just opened,
 * and pg_session_open checked it).  A server's settings change under
 * sessions it accepted (synchronous_standby_names emptied and reloaded,
 * the declaration withdrawn), and a primary that paused through a
 * failover and came back holds sessions that were sound when they were
 * opened: such a primary was silent for at least the failover
 * manager's ttl, far longer than the period, so every session to it is
 * checked again before its next use, and no statement's wait (its
 * deadline, store_pg_io.c) outlasts the ttl.  A session refused, or
 * whose check failed, is closed, so that the next call opens one to
 * whichever server is the primary then.
 */
int
pg_sync_recheck(struct pgstore *s, struct pgconn *pc, int opened)
{
	uint64_t now = pg_mono_ms();
	int rc;

	if (s->read_only)
		return IDEM_OK;
	if (!opened && pc->checked_at != 0 && now - pc->checked_at <
	    PG_SYNC_CHECK_MS)
		return IDEM_OK;
	if (!opened) {
		pg_cost(pc, 1, 1);
		if ((rc = pg_sync_check(s, pc->c)) != IDEM_OK) {
			pc->broken = 1;
			return rc;
		}
	}
	pc->checked_at = now != 0 ? now : 1;
	return IDEM_OK;
}
