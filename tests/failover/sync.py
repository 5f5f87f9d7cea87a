#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The store refuses to be unsafe: a session whose commits would not
wait for a synchronous standby is refused (doc/DESIGN.md, invariant 11).

    python3 tests/failover/sync.py --build BUILD_DIR [--keep]

A throwaway primary (tests/lib/pg.py) with a real streaming standby
(pg_basebackup -R, its own socket), the provider service and one app
host (lighttpd + spawn-fcgi workers, tests/lib/cluster.py):

  - the primary declared a single server, nothing streaming: 201;
  - an asynchronous standby streams: the host's sessions, replaced, are
    refused: POST answers 503 problem+json store-unavailable with
    Retry-After, /healthz answers 503 saying why, the log says why, and
    nothing is charged; a new process (CGI) refuses at open, even with
    IDEM_PG_REPLICATION=none;
  - the standby made synchronous (synchronous_standby_names): the same
    worker processes pay again, the refused key's retry is 201, one
    charge;
  - no standby and no declaration (the database's idem.replication set
    to 'synchronous'): refused; IDEM_PG_REPLICATION=none on the host
    accepts it, a value that is neither refuses.

Output: "ok - ..." / "FAIL - ...: why" lines and "failover-sync: N
passed, N failed".
"""

import argparse
import atexit
import os
import secrets
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import pg  # noqa: E402
from lib.cluster import Cluster, brief, pay  # noqa: E402
from lib.common import DEADLINE, Results, become_subreaper, note  # noqa: E402
from lib.servers import cleanup_all  # noqa: E402
from lib.web import Reply, http_request  # noqa: E402

RESULTS = Results()


class Check(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise Check(why)


def refused(r, what):
    """r must be the fail-closed answer: 503 problem+json
    store-unavailable, Retry-After, a detail that says why."""
    expect(isinstance(r, Reply) and r.status == 503, f"{what}: {brief(r)}")
    expect((r.header("Content-Type") or "").startswith(
        "application/problem+json"), f"{what}: not problem+json: {brief(r)}")
    doc = r.json()
    expect(doc.get("type") == "/problems/store-unavailable.html",
           f"{what}: type {doc.get('type')!r}")
    expect((r.header("Retry-After") or "").isdigit(),
           f"{what}: Retry-After {r.header('Retry-After')!r}")
    expect("synchronous standby" in doc.get("detail", ""),
           f"{what}: the detail does not say why: {doc.get('detail')!r}")


def wait_for(what, cond, seconds=30):
    """A bounded poll of cond."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.1)
    raise Check(f"{what}: not within {seconds} s")


def end_sessions(c):
    """Every session of the store's database but ours ends: the hosts'
    pools open new ones, which the store checks."""
    c.pg.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
              "WHERE datname = 'idem' AND pid <> pg_backend_pid()")
    # Gone, not only told to go: a worker's next call finds its session
    # closed and opens another, rather than meet the end mid-statement.
    wait_for("the ended sessions gone", lambda: c.pg.query(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = 'idem'") ==
        [["0"]])


def set_names(c, names):
    """synchronous_standby_names, reloaded, and seen by new sessions."""
    if names is None:
        c.pg.psql("ALTER SYSTEM RESET synchronous_standby_names")
    else:
        c.pg.psql(f"ALTER SYSTEM SET synchronous_standby_names = '{names}'")
    c.pg.psql("SELECT pg_reload_conf()")
    wait_for("synchronous_standby_names reloaded", lambda: c.pg.query(
        "SHOW synchronous_standby_names") == [[names or ""]])


def cgi_healthz(h, extra):
    """GET /healthz from a new idem-fcgi process (plain CGI): the store's
    open.  (status, body, stderr)."""
    env = h.clean_env(dict(h.idem_env))
    env.update({"GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.1",
                "SERVER_NAME": "localhost", "SERVER_PORT": "8080",
                "REMOTE_ADDR": "127.0.0.1", "REQUEST_METHOD": "GET",
                "REQUEST_URI": "/healthz", "SCRIPT_NAME": "",
                "PATH_INFO": "/healthz", "QUERY_STRING": "",
                "HTTP_HOST": "localhost"})
    env.update(extra)
    kw = {}
    if h.uid is not None:
        kw = {"user": h.uid, "group": h.gid, "extra_groups": []}
    p = subprocess.run([os.path.join(h.bindir, "idem-fcgi")], env=env,
                       stdin=subprocess.PIPE, capture_output=True,
                       cwd=h.root, timeout=DEADLINE.timeout(30), **kw)
    head, _, body = p.stdout.partition(b"\r\n\r\n")
    status = 200
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"status:"):
            status = int(line.split()[1])
    return status, body, p.stderr.decode(errors="replace")


def host_log(h):
    out = []
    for path in h.logs:
        try:
            with open(path, errors="replace") as f:
                out.append(f.read())
        except OSError:
            pass
    return "\n".join(out)


def run_case(name, fn, *args):
    t0 = time.monotonic()
    try:
        fn(*args)
        RESULTS.ok(name)
    except Check as e:
        RESULTS.fail(name, str(e))
    note(f"{time.monotonic() - t0:.1f} s")


def charges(c):
    return c.provider.stats().get("charges", 0)


def case_single(c, h, state):
    r = pay(h, "sync-single-" + secrets.token_hex(6))
    expect(isinstance(r, Reply) and r.status == 201, f"POST: {brief(r)}")


def case_async(c, h, state):
    state["sb"] = c.pg.standby("standby1")
    wait_for("the standby streams", lambda: c.pg.query(
        "SELECT state, sync_state FROM pg_stat_replication") ==
        [["streaming", "async"]])
    end_sessions(c)
    before = charges(c)
    state["key"] = key = "sync-refused-" + secrets.token_hex(6)
    refused(pay(h, key), "POST with an asynchronous standby")
    # The pool's other sessions were ended too: every one is refused.
    for i in range(3):
        refused(pay(h, f"{key}-{i}"), f"POST {i} with an asynchronous standby")
    r = http_request(h.port, "GET", "/healthz")
    refused(r, "GET /healthz with an asynchronous standby")
    expect(charges(c) == before, "a refused payment was charged")
    wait_for("the log line", lambda: "refuses the session: 1 standby(s) "
             "stream from the primary" in host_log(h), 10)


def case_async_open(c, h, state):
    for extra in ({}, {"IDEM_PG_REPLICATION": "none"}):
        status, body, err = cgi_healthz(h, extra)
        expect(status == 503 and b"synchronous standby" in body,
               f"/healthz of a new process {extra}: {status} {body[:200]!r}")
        expect("synchronous_standby_names is empty" in err,
               f"no log line at open {extra}: {err[-300:]!r}")


def case_sync(c, h, state):
    set_names(c, "standby1")
    wait_for("the standby is synchronous", lambda: c.pg.query(
        "SELECT sync_state FROM pg_stat_replication") == [["sync"]])
    before = charges(c)
    r = pay(h, state["key"])
    expect(isinstance(r, Reply) and r.status == 201,
           f"the refused key's retry: {brief(r)}")
    expect(charges(c) == before + 1, "not exactly one charge")
    r = http_request(h.port, "GET", "/healthz")
    expect(r.status == 200, f"GET /healthz: {r.brief()}")
    status, body, err = cgi_healthz(h, {})
    expect(status == 200, f"/healthz of a new process: {status} {body[:200]!r}")


def case_names_dropped(c, h, state):
    """synchronous_standby_names emptied under a running primary, the
    host's sessions open and accepted (an operator's reflex when commits
    hang on a stalled standby): the host refuses within the store's
    periodic check (PG_SCHEMA_CHECK_MS, 10 s), and pays again once the
    standby is named again."""
    r = pay(h, "sync-open-" + secrets.token_hex(6))
    expect(isinstance(r, Reply) and r.status == 201, f"POST: {brief(r)}")
    set_names(c, None)
    seen = []

    def all_refused():
        """Six calls in a row, payments and /healthz, every one the
        fail-closed answer: every worker's sessions refused."""
        for i in range(6):
            r = pay(h, "sync-dropped-" + secrets.token_hex(6)) if i % 2 \
                else http_request(h.port, "GET", "/healthz")
            seen[:] = [r]
            try:
                refused(r, "a call after synchronous_standby_names was "
                        "emptied")
            except Check:
                return False
        return True
    try:
        wait_for("every call refused on sessions opened before "
                 "synchronous_standby_names was emptied", all_refused, 25)
    except Check as e:
        raise Check(f"{e}; the last answer: {brief(seen[0])}") from None
    set_names(c, "standby1")
    wait_for("the standby is synchronous again", lambda: c.pg.query(
        "SELECT sync_state FROM pg_stat_replication") == [["sync"]])

    def paid():
        r = pay(h, "sync-again-" + secrets.token_hex(6))
        return isinstance(r, Reply) and r.status == 201
    wait_for("a payment accepted with the standby named again", paid, 20)


def case_undeclared(c, h, state):
    set_names(c, None)
    state.pop("sb").stop()
    wait_for("no standby", lambda: c.pg.query(
        "SELECT count(*) FROM pg_stat_replication") == [["0"]])
    c.pg.psql("ALTER DATABASE idem SET idem.replication = 'synchronous'")
    end_sessions(c)
    r = pay(h, "sync-undeclared-" + secrets.token_hex(6))
    refused(r, "POST to an undeclared single server")
    expect("say so" in host_log(h), "no log line for the undeclared server")
    status, body, err = cgi_healthz(h, {"IDEM_PG_REPLICATION": "none"})
    expect(status == 200, f"IDEM_PG_REPLICATION=none: {status} {body[:200]!r}")
    status, body, err = cgi_healthz(h, {"IDEM_PG_REPLICATION": "synchronous"})
    expect(status == 503, f"IDEM_PG_REPLICATION=synchronous: {status}")
    status, body, err = cgi_healthz(h, {"IDEM_PG_REPLICATION": "async"})
    expect(status == 503 and "must be" in err,
           f"IDEM_PG_REPLICATION=async: {status} {err[-200:]!r}")
    c.pg.psql("ALTER DATABASE idem RESET idem.replication")
    end_sessions(c)
    r = pay(h, "sync-declared-" + secrets.token_hex(6))
    expect(isinstance(r, Reply) and r.status == 201,
           f"declared again by the server: {brief(r)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory")
    ap.add_argument("--suite", default="failover-sync")
    ap.add_argument("--deadline", type=float, default=180)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    DEADLINE.reset(args.deadline)
    if not pg.available():
        RESULTS.fail("PostgreSQL", "no server installed")
        return RESULTS.summary(args.suite)
    become_subreaper()
    atexit.register(cleanup_all)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    hosts = argparse.Namespace(workers=2, latency_ms=0, keep=args.keep,
                               provider_timeout_ms=10000)
    c = Cluster(os.path.abspath(args.build), hosts, hosts=1)
    atexit.register(c.cleanup)
    state = {}
    try:
        c.start()
        h = c.hosts[0]
        note(f"PostgreSQL {c.uri}; host {h.name} on {h.port}")
        run_case("a single server, declared: 201", case_single, c, h, state)
        run_case("an asynchronous standby: replaced sessions refused, 503 "
                 "with Retry-After, /healthz and the log say why, no charge",
                 case_async, c, h, state)
        run_case("an asynchronous standby: a new process refuses at open, "
                 "IDEM_PG_REPLICATION=none too", case_async_open, c, h, state)
        run_case("the standby made synchronous: the same workers pay, the "
                 "refused key's retry is 201, one charge", case_sync, c, h,
                 state)
        run_case("synchronous_standby_names emptied under open sessions: "
                 "refused within the periodic check, accepted again when "
                 "the standby is named", case_names_dropped, c, h, state)
        run_case("no standby, not declared: refused; IDEM_PG_REPLICATION "
                 "decides over the database", case_undeclared, c, h, state)
    except Exception as e:              # noqa: BLE001
        RESULTS.fail("failover-sync", f"{type(e).__name__}: {e}\n{c.log_tail()}")
    finally:
        if "sb" in state:
            state["sb"].stop()
        c.cleanup()
    return RESULTS.summary(args.suite)


if __name__ == "__main__":
    sys.exit(main())
