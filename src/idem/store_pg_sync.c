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
 * every PG_SYNC_CHECK_MS while in use (pg_sync_recheck), and refused
 * with IDEM_EUNSAFE when:
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
 * The check reads settings any role may read; pg_stat_replication shows
 * every role its rows (one per WAL sender) but only roles with the
 * privileges of pg_read_all_stats their columns, so without them a base
 * backup in progress counts as a standby (refused, never wrongly
 * accepted).  A read-only store (operators' tools) writes nothing and
 * is not checked.
 */
#include "config.h"

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
	PG_SYNC_STANDBY         /* the session is on a standby */
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

int
pg_sync_check(struct pgstore *s, PGconn *c)
{
	PGresult *r;
	const char *commit, *names, *declared;
	char detail[512];
	long streaming;
	int single, rc = IDEM_EUNSAFE;
	enum pg_sync_why why;

	if (s->read_only)
		return IDEM_OK;
	r = PQexec(c, "SELECT current_setting('synchronous_commit'), "
	    "current_setting('synchronous_standby_names'), "
	    "coalesce(current_setting('idem.replication', true), ''), "
	    "(SELECT count(*) FROM pg_stat_replication "
	    "WHERE state IS DISTINCT FROM 'backup'), pg_is_in_recovery()");
	if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK ||
	    PQntuples(r) != 1 || PQnfields(r) != 5) {
		PQclear(r);
		return IDEM_EIO;
	}
	commit = PQgetvalue(r, 0, 0);
	names = PQgetvalue(r, 0, 1);
	declared = PQgetvalue(r, 0, 2);
	streaming = strtol(PQgetvalue(r, 0, 3), NULL, 10);
	single = s->repl == PG_REPL_NONE ||
	    (s->repl == PG_REPL_AUTO && strcmp(declared, "none") == 0);
	if (strcmp(PQgetvalue(r, 0, 4), "t") == 0) {
		why = PG_SYNC_STANDBY;
		snprintf(detail, sizeof(detail), "the server is a standby "
		    "(in recovery); name the primary, or every node with "
		    "target_session_attrs=read-write");
		rc = IDEM_EIO;
	} else if (strcmp(commit, "on") != 0 &&
	    strcmp(commit, "remote_apply") != 0) {
		why = PG_SYNC_COMMIT;
		snprintf(detail, sizeof(detail), "synchronous_commit is "
		    "\"%s\", so a commit does not wait for its standbys",
		    commit);
	} else if (names[0] != '\0') {
		why = PG_SYNC_OK;
		snprintf(detail, sizeof(detail), "synchronous_standby_names "
		    "'%s'", names);
		rc = IDEM_OK;
	} else if (streaming > 0) {
		why = PG_SYNC_ASYNC;
		snprintf(detail, sizeof(detail), "%ld standby(s) stream from "
		    "the primary but synchronous_standby_names is empty: "
		    "commits do not wait for them, and a failover would lose "
		    "acknowledged writes", streaming);
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
	PQclear(r);
	pg_sync_log(s, why, detail);
	return rc;
}

/*
 * The check again on a session already in use, for a server whose
 * settings change under sessions it accepted (synchronous_standby_names
 * emptied and reloaded, the declaration withdrawn): every
 * PG_SYNC_CHECK_MS, on the session a call takes, whichever thread's
 * call comes first.  A refusal holds for every call of the store until
 * a check (this one again, or a newly opened session's) accepts; the
 * other threads go on with what the last check found.  opened: pc's
 * session was just opened, and pg_session_open checked it.
 */
int
pg_sync_recheck(struct pgstore *s, struct pgconn *pc, int opened)
{
	uint64_t now;
	int due, rc;

	if (s->read_only)
		return IDEM_OK;
	now = pg_mono_ms();
	pthread_mutex_lock(&s->mu);
	if (opened) {
		/* pg_session_open checked it: the next is a period on. */
		s->sync_bad = 0;
		(void)pg_check_due(&s->sync_due_ms, now, PG_SYNC_CHECK_MS, 1);
		due = 0;
	} else
		due = pg_check_due(&s->sync_due_ms, now, PG_SYNC_CHECK_MS, 0);
	rc = s->sync_bad ? IDEM_EUNSAFE : IDEM_OK;
	pthread_mutex_unlock(&s->mu);
	if (!due)
		return rc;
	rc = pg_sync_check(s, pc->c);
	if (rc == IDEM_EIO) {
		/* Not a verdict: the session, or the read, failed. */
		if (PQstatus(pc->c) != CONNECTION_OK)
			pc->broken = 1;
		pthread_mutex_lock(&s->mu);
		s->sync_due_ms = 0;
		pthread_mutex_unlock(&s->mu);
		return rc;
	}
	pthread_mutex_lock(&s->mu);
	s->sync_bad = rc == IDEM_EUNSAFE;
	pthread_mutex_unlock(&s->mu);
	return rc;
}
