# SPDX-License-Identifier: MIT
"""PostgreSQL's own failures (--store pg only): a schema newer than the
program, and a session the server ends in the middle of a write."""

import json
import os
import subprocess
import threading
import time

from lib.common import DEADLINE, has_sanitizer_report
from crashlib import (CONF, RESULTS, cleanup_instance, pay, print_table,
                      replay_problems, retry_after, start_instance, vnote,
                      worker_log_problems)
from part_cgi import CgiState


def problem_of(ans, status, ptype):
    """What is wrong with ans as a problem+json answer of status and type."""
    out = []
    if ans is None:
        return [f"no answer (expected {status})"]
    if ans.status != status:
        return [f"status {ans.status}, expected {status}: {ans.brief()}"]
    if (ans.header("Content-Type") or "").split(";")[0] != "application/problem+json":
        out.append(f"Content-Type {ans.header('Content-Type')!r}")
    try:
        doc = json.loads(ans.body)
    except ValueError:
        return out + [f"body not JSON: {ans.body[:120]!r}"]
    if not str(doc.get("type", "")).split("/")[-1].startswith(ptype + ".") or doc.get("status") != status:
        out.append(f"problem {doc}")
    if status == 503 and not (ans.header("Retry-After") or "").isdigit():
        out.append(f"Retry-After {ans.header('Retry-After')!r}")
    return out


# ---------------------------------------------------------------- newer schema

def schema_state(st):
    """Everything migrate could touch: versions, tables, columns, rows."""
    db = st.pgdb
    return (CONF.pg.query("SELECT version FROM idem_schema_version ORDER BY 1", db),
            CONF.pg.query("SELECT table_name, column_name, data_type FROM "
                          "information_schema.columns WHERE table_schema = "
                          "'public' ORDER BY 1, 2", db),
            CONF.pg.query("SELECT indexname, indexdef FROM pg_indexes WHERE "
                          "schemaname = 'public' ORDER BY 1", db),
            CONF.pg.dump(db))


def pg_schema_newer(args):
    """idemctl migrate refuses a database whose schema is newer than the
    program's, changing nothing, and the responder answers 503 (the store
    is unavailable to it) instead of running on a schema it does not know."""
    name = "pg: schema newer than the program"
    problems = []
    st = CgiState(args.build)
    try:
        now = int(time.time() * 1000)
        r = st.post("schema-before", now)
        if r.answer is None or r.answer.status != 201:
            problems.append(f"a payment before: {r.brief()}")
        ref = r.answer
        CONF.pg.psql("INSERT INTO idem_schema_version (version) "
                     "SELECT max(version) + 1 FROM idem_schema_version", st.pgdb)
        newer = CONF.pg.query("SELECT max(version) FROM idem_schema_version",
                              st.pgdb)[0][0]
        before = schema_state(st)
        p = subprocess.run([os.path.join(args.build, "idemctl"), "-s", st.store,
                            "migrate"], capture_output=True, text=True,
                           timeout=DEADLINE.timeout(30))
        vnote(f"{name}: idemctl migrate: exit {p.returncode}, {p.stderr.strip()!r}")
        if p.returncode == 0:
            problems.append(f"idemctl migrate exited 0: {p.stdout!r}")
        if f"schema version {newer}, newer than" not in p.stderr:
            problems.append(f"idemctl migrate said {p.stderr.strip()!r}, not that the "
                            f"database's version {newer} is newer than the program's")
        if has_sanitizer_report(p.stderr):
            problems.append(f"idemctl: {p.stderr[-600:]}")
        for key in ("schema-after", "schema-before"):
            r = st.post(key, now + 1000)
            why = problem_of(r.answer, 503, "store-unavailable")
            if r.rc != 0 or has_sanitizer_report(r.err):
                why.append(f"the responder {r.brief()}: {r.err[-400:]}")
            if "newer than this program" not in r.err:
                why.append(f"the responder's log does not say why: {r.err[-300:]!r}")
            problems += [f"POST {key}: {w}" for w in why]
        if schema_state(st) != before:
            problems.append("the database changed after the refused migration "
                            "and the refused requests")
        # the program that knows the schema finds everything where it was
        CONF.pg.psql("DELETE FROM idem_schema_version WHERE version = %s" % newer,
                     st.pgdb)
        r = st.post("schema-before", now + 2000)
        if r.answer is None or ref is None:
            problems.append(f"the replay once the schema is known again: {r.brief()}")
        else:
            problems += replay_problems(ref, r.answer, "the replay afterwards")
        stats = st.stats(now + 2000)
        if (stats["keys"], stats["charges"], stats["payments"]) != (1, 1, 1):
            problems.append(f"idemctl stats {stats}: expected 1 key, 1 charge, "
                            f"1 payment")
    finally:
        st.cleanup()
    RESULTS.record(name, problems)


# ---------------------------------------------------------------- session lost

class Gate:
    """The fifo of IDEM_FAULT=POINT:wait=FIFO: a worker that reaches POINT
    opens it and blocks until the test has opened and closed its end."""

    def __init__(self, path, uid, gid):
        self.path = path
        os.mkfifo(path, 0o666)
        if uid is not None:
            os.chown(path, uid, gid)
        self.stop = threading.Event()
        self.thread = None

    def hold(self, seconds):
        """Waits for a worker at the point; returns the open end (the
        worker stays there until it is closed), or None."""
        end = time.monotonic() + min(seconds, DEADLINE.timeout(seconds))
        while time.monotonic() < end:
            try:
                return os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:             # ENXIO: no worker there yet
                time.sleep(0.01)
        return None

    def open_always(self):
        """From now on lets every worker through at once."""
        def run():
            while not self.stop.is_set():
                fd = self.hold(0.2)
                if fd is not None:
                    os.close(fd)
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def close(self):
        self.stop.set()
        if self.thread is not None:
            self.thread.join(5)


def in_transaction(db):
    return [int(r[0]) for r in CONF.pg.query(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()", db)]


def session_lost(args, server, point, state):
    """One worker whose session the server ends (pg_terminate_backend from
    another session) while it stands at point, between the statements of
    its write: the request fails with 503 and writes nothing half, the
    retries end in one charge and one payment, and the same worker serves
    on with its pool mended."""
    name = f"pg: session terminated at {point}"
    row = [point, "", "", "", "", "", ""]
    problems = []
    inst = start_instance(server, 1, 2, 0, f"{point}:wait={{markers}}/gate",
                          args.keep)
    gate = Gate(os.path.join(inst.root, "markers", "gate"), inst.uid, inst.gid)
    db = inst.idem_env["IDEM_STORE"].split("?")[0].rsplit("/", 1)[1]
    try:
        sec = inst.secrets["acct_alpha"]
        key = f"pg-lost-{point}"
        workers = set(inst.worker_pids())
        first = {}
        t = threading.Thread(target=lambda: first.update(o=pay(inst.port, sec, key, timeout=30)),
                             daemon=True)
        t.start()
        fd = gate.hold(20)
        if fd is None:
            problems.append(f"no worker reached {point}")
        else:
            victims = in_transaction(db)
            if len(victims) != 1:
                problems.append(f"{len(victims)} sessions in a transaction, expected "
                                f"the worker's one")
            for pid in victims:
                CONF.pg.query(f"SELECT pg_terminate_backend({pid}, 10000)")
            row[1] = f"terminated {len(victims)}"
            os.close(fd)
        t.join(DEADLINE.timeout(30))
        gate.open_always()
        o1 = first.get("o")
        a1 = o1.answer if o1 else None
        row[2] = o1.label() if o1 else "no answer"
        problems += [f"the request whose session ended: {w}"
                     for w in problem_of(a1, 503, "store-unavailable")]
        st = inst.stats()
        row[3] = (f"keys {st['keys']} in_progress {st['in_progress']} "
                  f"ch={st['charges']} pay={st['payments']}")
        want = ({"keys": 0, "charges": 0, "payments": 0} if state == "absent" else
                {"keys": 1, "in_progress": 1, "charges": 1, "payments": 0})
        bad = {k: st.get(k) for k, v in want.items() if st.get(k) != v}
        if bad:
            problems.append(f"right after: idemctl stats {st}, expected {want}")
        # like a client: retry, honouring Retry-After, until the 201
        end = time.monotonic() + min(20, DEADLINE.timeout(20))
        seen = []
        while True:
            o = pay(inst.port, sec, key)
            seen.append(o.label())
            if o.answer is not None and o.answer.status == 201:
                break
            if time.monotonic() > end:
                break
            time.sleep(retry_after(o.answer, 3) if o.answer is not None
                       and o.answer.status in (409, 503) else 0.2)
        row[4] = ", ".join(seen)
        if o.answer is None or o.answer.status != 201 or o.answer.replayed:
            problems.append(f"retries: {seen}, expected a fresh 201 at the end")
        else:
            rep = pay(inst.port, sec, key)
            if rep.answer is None:
                problems.append(f"replay: {rep.label()}")
            else:
                problems += replay_problems(o.answer, rep.answer, "replay")
        # the pool mended itself: the same worker pays on, many at once
        more = [None] * 20
        threads = [threading.Thread(target=lambda i=i: more.__setitem__(
            i, pay(inst.port, sec, f"{key}-after-{i}")), daemon=True) for i in range(20)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(DEADLINE.timeout(30))
        ok = sum(1 for m in more if m is not None and m.answer is not None
                 and m.answer.status == 201)
        row[5] = f"{ok}/20 201"
        if ok != 20:
            problems.append("after: " + ", ".join(sorted({m.label() if m else "hung"
                                                           for m in more})))
        if set(inst.worker_pids()) != workers:
            problems.append(f"workers {sorted(workers)} -> {sorted(inst.worker_pids())}: "
                            f"the pool should mend without a restart")
        st = inst.stats()
        row[6] = f"ch={st['charges']} pay={st['payments']}"
        want = {"keys": 21, "completed": 21, "in_progress": 0, "stuck": 0,
                "charges": 21, "payments": 21}
        bad = {k: st.get(k) for k, v in want.items() if st.get(k) != v}
        if bad:
            problems.append(f"at the end: idemctl stats {st}, expected {want}")
        problems += worker_log_problems(inst)
        if problems:
            problems.append("log tail:\n" + inst.log_tail())
    finally:
        gate.close()
        cleanup_instance(inst)
    RESULTS.record(name, problems)
    return row


def part_pg(args, server):
    try:
        pg_schema_newer(args)
    except Exception as e:      # noqa: BLE001
        RESULTS.fail("pg: schema newer than the program", f"{type(e).__name__}: {e}")
    rows = []
    for point, state in (("store_claim_commit", "absent"),
                         ("store_complete_commit", "in_progress")):
        if DEADLINE.left() < 30:
            RESULTS.fail(f"pg: session terminated at {point}", "global deadline too close")
            continue
        try:
            rows.append(session_lost(args, server, point, state))
        except Exception as e:      # noqa: BLE001
            RESULTS.fail(f"pg: session terminated at {point}", f"{type(e).__name__}: {e}")
    print_table(f"Sessions terminated mid-write ({server}, 1 worker, IDEM_LEASE=2)",
                ["point", "server", "first answer", "store right after", "retries",
                 "20 new keys after", "end"], rows)
