#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The cluster suite: idem as several hosts sharing one PostgreSQL store.

    python3 tests/cluster/run.py --build BUILD_DIR [--rounds N] [--keep]

A throwaway PostgreSQL server (tests/lib/pg.py), the provider service,
and two app hosts, each its own lighttpd with spawn-fcgi workers of many
threads, temporary directory, keys file and logs (tests/lib/cluster.py),
with a short lease (IDEM_LEASE).  Every case reads the charges from the
provider service's GET /stats and the payments from the shared store
(idemctl stats):

  - the README's session through each host, its payment replayed by the
    other one (same bytes, same ETag);
  - 50 concurrent duplicates of one key split across both hosts, for many
    keys: one charge and one 201 body a key, the rest replays or 409s;
  - a whole host killed (SIGKILL to its lighttpd and workers) while its
    payment is held at the provider, after the provider committed the
    charge (the provider_committed fault point on a fifo): the client's
    retries on the other host get 409 until the lease ends, then the
    take-over's 201, and the provider deduplicates on the derived key;
  - PostgreSQL restarted (pg_ctl restart -m fast) while clients pay
    through both hosts: 503 with Retry-After or 409 meanwhile, then every
    key retried to its 201, one charge and one payment each.

Output: "ok - ..." / "FAIL - ...: why" lines and "cluster: N passed, N
failed".  Needs a build with --enable-fault-points.
"""

import argparse
import atexit
import collections
import errno
import http.client
import itertools
import os
import re
import secrets
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import pg  # noqa: E402
from lib.cluster import Cluster  # noqa: E402
from lib.common import (DEADLINE, HOST, REPLAY_EXEMPT, Results,  # noqa: E402
                        become_subreaper, has_sanitizer_report, note)
from lib.servers import cleanup_all  # noqa: E402
from lib.web import Reply, http_request  # noqa: E402

BODY = b'{"amount": 100.00, "currency": "BRL"}'
OTHER_BODY = b'{"amount": 250.00, "currency": "BRL"}'
RESULTS = Results()


class Check(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise Check(why)


def new_key(tag):
    return f"cluster-{tag}-{secrets.token_hex(8)}"


def headers(secret, key=None, ctype="application/json"):
    h = {"Authorization": f"Bearer {secret}"}
    if ctype:
        h["Content-Type"] = ctype
    if key is not None:
        h["Idempotency-Key"] = f'"{key}"'
    return h


def pay(host, key, body=BODY, account="acct_alpha", conn=None):
    """POST /payments on host; the Reply, or the exception the transport
    raised."""
    try:
        return http_request(host.port, "POST", "/payments", body,
                            headers(host.secrets[account], key), conn=conn)
    except (OSError, http.client.HTTPException) as e:
        return e


def get(host, path, account="acct_alpha"):
    return http_request(host.port, "GET", path, None,
                        headers(host.secrets[account], ctype=None))


def replayed(r):
    return (r.header("Idempotent-Replayed") or "").lower() == "true"


def brief(a):
    return a.brief() if isinstance(a, Reply) else f"{type(a).__name__}: {a}"


def is_problem(r, slug):
    if not (r.header("Content-Type") or "").startswith("application/problem+json"):
        return False
    return r.json().get("type") == f"/problems/{slug}.html"


def retry_after(r, most):
    """Retry-After of r, which must be whole seconds in 1..most."""
    ra = r.header("Retry-After") or ""
    expect(ra.isdigit() and 1 <= int(ra) <= most,
           f"{r.status} with Retry-After {ra!r}, expected 1..{most}")
    return int(ra)


def replay_problems(first, again, what):
    """What differs between a stored answer and its replay: the status, the
    body, and every header but Date (and the replay's own marker)."""
    out = []
    if not isinstance(again, Reply):
        return [f"{what}: {brief(again)}"]
    if again.status != first.status:
        out.append(f"{what}: status {again.status}, first {first.status}")
    if again.body != first.body:
        out.append(f"{what}: body {again.body[:120]!r}, first {first.body[:120]!r}")
    if not replayed(again):
        out.append(f"{what}: no Idempotent-Replayed: true")

    def kept(r):
        return sorted((k.lower(), v) for k, v in r.headers
                      if k.lower() not in REPLAY_EXEMPT)
    if kept(again) != kept(first):
        out.append(f"{what}: headers {kept(again)}, first {kept(first)}")
    return out


def deltas(before, after, *names):
    return {n: after.get(n, 0) - before.get(n, 0) for n in names}


def expect_deltas(before, after, **want):
    got = deltas(before, after, *want)
    expect(got == want, "store and provider counts moved by "
           + ", ".join(f"{k} {got[k]} (expected {v})" for k, v in want.items()))


def metric(host, name):
    r = get(host, "/metrics", "metrics")
    expect(r.status == 200, f"{host.name} GET /metrics: {r.brief()}")
    m = re.search(rb"^" + re.escape(name.encode()) + rb" (\d+)$", r.body, re.M)
    expect(m, f"{host.name}: no {name} in /metrics")
    return int(m.group(1))


# ---------------------------------------------------------------- cases

def case_readme(c, x, y):
    """The README's session through host x, every answer that a retry may
    get checked on host y too."""
    before = c.stats()
    key = new_key("order")
    first = pay(x, key)
    expect(isinstance(first, Reply) and first.status == 201 and not replayed(first),
           f"1. payment on {x.name}: {brief(first)}")
    loc = first.header("Location") or ""
    expect(re.fullmatch(r"/payments/pay_[0-9a-f]+", loc), f"Location {loc!r}")
    expect(first.header("ETag"), "201 without ETag")
    for h in (y, x):
        problems = replay_problems(first, pay(h, key), f"2. retry on {h.name}")
        expect(not problems, "; ".join(problems))
    r = pay(y, key, OTHER_BODY)
    expect(isinstance(r, Reply) and r.status == 422 and is_problem(r, "key-reused"),
           f"3. same key, another amount on {y.name}: {brief(r)}")
    r = http_request(x.port, "POST", "/payments", BODY, headers(x.secrets["acct_alpha"]))
    expect(r.status == 400 and is_problem(r, "missing-key"), f"4. no key: {r.brief()}")
    # 5. refunds: part of it on x, all that is left on y, read back on both.
    ra = http_request(x.port, "POST", loc + "/refunds", b'{"amount": 30.00}',
                      headers(x.secrets["acct_alpha"], key + "-a"))
    expect(ra.status == 201, f"5. refund of 30.00 on {x.name}: {ra.brief()}")
    rb = http_request(y.port, "POST", loc + "/refunds", b"{}",
                      headers(y.secrets["acct_alpha"], key + "-b"))
    expect(rb.status == 201, f"5. refund of the rest on {y.name}: {rb.brief()}")
    for r in (ra, rb):
        expect(re.fullmatch(re.escape(loc) + r"/refunds/re_[0-9a-f]+",
                            r.header("Location") or ""),
               f"refund Location {r.header('Location')!r}")
    for h in (x, y):
        lst = get(h, loc + "/refunds")
        expect(lst.status == 200 and len(lst.json().get("data", [])) == 2,
               f"GET {loc}/refunds on {h.name}: {lst.brief()}")
        p = get(h, loc)
        expect(p.status == 200 and b'"amount_refunded":100.00' in p.body,
               f"GET {loc} on {h.name}: {p.brief()}")
        recent = get(h, "/payments?limit=5")
        expect(recent.status == 200 and
               any(d.get("id") == loc.rsplit("/", 1)[1]
                   for d in recent.json().get("data", [])),
               f"GET /payments?limit=5 on {h.name} lacks {loc}: {recent.brief()}")
        expect(metric(h, "idem_requests_total") > 0, f"{h.name}: no requests counted")
    expect_deltas(before, c.stats(), charges=1, payments=1, refunds=2,
                  provider_refunds=2)


def concurrently(hosts, fn):
    """fn(i, conn) for each of hosts on a thread of its own, with a
    connection to that host open before a barrier lets them all send at
    once; the answers (or exceptions) in order."""
    n = len(hosts)
    barrier = threading.Barrier(n, timeout=DEADLINE.timeout(30))
    out = [None] * n

    def one(i, conn):
        try:
            conn.connect()
            barrier.wait()
            out[i] = fn(i, conn)
        except Exception as e:          # noqa: BLE001 - reported by the caller
            out[i] = e
    threads = [threading.Thread(
        target=one, daemon=True,
        args=(i, http.client.HTTPConnection(HOST, h.port,
                                            timeout=DEADLINE.timeout(60))))
        for i, h in enumerate(hosts)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(DEADLINE.timeout(60))
    return out


def case_duplicates(c, rounds, n):
    """n concurrent duplicates of one key, alternately on each host, for
    rounds keys: one 201 body a key, every other answer its replay or a 409;
    as many charges and payments as keys."""
    before = c.stats()
    counts = collections.Counter()
    for rnd in range(rounds):
        key = new_key(f"dup{rnd}")
        hosts = [c.hosts[i % len(c.hosts)] for i in range(n)]
        out = concurrently(hosts, lambda i, conn, key=key:
                           (hosts[i].name, pay(hosts[i], key, conn=conn)))
        answers = [a if isinstance(a, Exception) else a[1] for a in out]
        bad = [brief(a) for a in answers
               if not isinstance(a, Reply) or a.status not in (201, 409)]
        expect(not bad, f"key {rnd}: answers other than 201 and 409: {bad[:3]}")
        created = [a for a in answers if a.status == 201 and not replayed(a)]
        expect(len(created) == 1, f"key {rnd}: {len(created)} answers were not "
               f"replays: {[a.header('Location') for a in created]}")
        first = created[0]
        for a in answers:
            if a.status == 201 and a is not first:
                problems = replay_problems(first, a, f"key {rnd}: replay")
                expect(not problems, "; ".join(problems))
            elif a.status == 409:
                retry_after(a, int(c.lease))
                expect(is_problem(a, "request-in-progress"), f"409: {a.brief()}")
        made_on = next(o[0] for o in out if not isinstance(o, Exception)
                       and o[1] is first)
        counts["created on " + made_on] += 1
        counts["replayed"] += sum(1 for a in answers if a.status == 201) - 1
        counts["409"] += sum(1 for a in answers if a.status == 409)
    note(f"{rounds} keys x {n} duplicates over {len(c.hosts)} hosts: "
         + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    expect_deltas(before, c.stats(), charges=rounds, payments=rounds)


class Gate:
    """A fifo the provider_committed fault point waits on: the provider
    holds its answer, with the charge committed, until release()."""

    def __init__(self, path, owner):
        self.path = path
        os.mkfifo(path, 0o600)
        if owner is not None:
            os.chown(path, *owner)
        self.released = False

    def release(self, seconds=10):
        """Opens and closes the writing end once the provider waits on the
        reading end; False when nothing waited within seconds."""
        if self.released:
            return True
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                if e.errno != errno.ENXIO:
                    raise
                time.sleep(0.05)        # no reader yet: poll for one
                continue
            os.close(fd)
            self.released = True
            return True
        return False


def wait_for(what, cond, seconds):
    end = time.monotonic() + min(seconds, DEADLINE.timeout(seconds))
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise Check(f"{what}: not within {seconds} s")


def case_host_killed(c):
    """Host a's payment is held at the provider after the charge committed;
    host a dies whole; the client retries on host b."""
    a, b = c.hosts[0], c.hosts[1]
    prov = c.provider
    home = c.provider_home
    gate = Gate(os.path.join(home.root, "provider-gate"),
                None if home.uid is None else (home.uid, home.gid))
    prov.restart_backend({"IDEM_FAULT": f"provider_committed:wait={gate.path}"})
    try:
        before = c.stats()
        takeovers = metric(b, "idem_takeovers_total")
        key = new_key("killed")
        box = {}
        client = threading.Thread(target=lambda: box.update(r=pay(a, key)),
                                  daemon=True)
        client.start()
        wait_for("the provider committing the charge",
                 lambda: prov.stats()["charges"] == before["charges"] + 1, 30)
        killed = c.kill_host(a)
        client.join(DEADLINE.timeout(10))
        expect(not client.is_alive(), f"the client of {a.name} still waits "
               "after its host was killed")
        first = box.get("r")
        expect(not isinstance(first, Reply) or first.status >= 500,
               f"the killed host answered {brief(first)}")
        note(f"{a.name} killed (workers {killed}) with its payment at the "
             f"provider; its client got {brief(first)}")
        # The retry on the other host, at once: the claim is a's, its lease runs.
        r = pay(b, key)
        expect(isinstance(r, Reply) and r.status == 409 and
               is_problem(r, "request-in-progress"),
               f"retry on {b.name} within the lease: {brief(r)}")
        seen = []
        end = time.monotonic() + c.lease * 3 + 10
        while isinstance(r, Reply) and r.status == 409 and time.monotonic() < end:
            time.sleep(retry_after(r, int(c.lease)))
            r = pay(b, key)
            seen.append(brief(r)[:40])
        expect(isinstance(r, Reply) and r.status == 201 and not replayed(r),
               f"retrying on {b.name} after the lease: expected the "
               f"take-over's 201, got {brief(r)} (retries: {seen})")
        expect(metric(b, "idem_takeovers_total") == takeovers + 1,
               f"{b.name}: idem_takeovers_total did not count one take-over")
        # The provider answered the take-over's call from its store while
        # the first call still waits at the gate.
        expect(gate.release(), "nothing waited at the provider's gate")
        after = c.stats()
        expect_deltas(before, after, charges=1, payments=1)
        expect(after["in_progress"] == 0 and after["stuck"] == 0,
               f"keys left in progress {after['in_progress']}, stuck {after['stuck']}")
        # Host a comes back and replays what b stored.
        a.start()
        problems = replay_problems(r, pay(a, key), f"replay on {a.name} restarted")
        expect(not problems, "; ".join(problems))
        expect_deltas(before, c.stats(), charges=1, payments=1)
    finally:
        gate.release(1)
        prov.restart_backend({})
        if a.server is None:
            a.start()


def case_pg_restart(c, threads, more):
    """Clients pay fresh keys through both hosts; when some have been
    answered, PostgreSQL restarts; each client goes on for `more` keys
    after it is back.  Every key is retried, on alternate hosts, until its
    201: only 503 with Retry-After and 409 may come before it."""
    before = c.stats()
    lock = threading.Lock()
    finals = {}                         # key -> (host, the 201)
    transient = collections.Counter()
    bad = []
    answered = [0]
    trigger = threading.Event()
    restarted = threading.Event()
    stop = threading.Event()
    seq = itertools.count()
    lease = int(c.lease)

    def one_key(i, key):
        for attempt in itertools.count():
            if DEADLINE.left() < 15 or stop.is_set():
                bad.append(f"{key}: still no 201 when the case ended")
                return
            h = c.hosts[(i + attempt) % len(c.hosts)]
            r = pay(h, key)
            if isinstance(r, Reply) and r.status == 201:
                with lock:
                    finals[key] = (h, r)
                return
            if isinstance(r, Reply) and r.status in (409, 503):
                with lock:
                    transient[r.status] += 1
                ra = r.header("Retry-After") or ""
                if not ra.isdigit() or not 1 <= int(ra) <= lease:
                    bad.append(f"{key}: {r.status} with Retry-After {ra!r}")
                    ra = "1"
                time.sleep(int(ra))
                continue
            bad.append(f"{key} on {h.name}: {brief(r)}")
            time.sleep(0.5)

    def client(i):
        left = more
        while left > 0 and not stop.is_set():
            if restarted.is_set():
                left -= 1
            one_key(i, new_key(f"pg{next(seq)}"))
            with lock:
                answered[0] += 1
                if answered[0] >= 2 * threads:
                    trigger.set()
    pool = [threading.Thread(target=client, args=(i,), daemon=True)
            for i in range(threads)]
    for th in pool:
        th.start()
    try:
        expect(trigger.wait(DEADLINE.timeout(60)), "no payments answered before the restart")
        t0 = time.monotonic()
        c.restart_postgres()
        took = time.monotonic() - t0
        restarted.set()
        for th in pool:
            th.join(DEADLINE.timeout(120))
        expect(not any(th.is_alive() for th in pool), "clients still running at the deadline")
    finally:
        stop.set()
        for th in pool:
            th.join(DEADLINE.timeout(30))
    note(f"PostgreSQL restarted in {took:.1f} s under {threads} clients: "
         f"{len(finals)} keys paid, answers before their 201: "
         f"{transient[503]} x 503, {transient[409]} x 409")
    expect(not bad, f"{len(bad)} answers other than 201, 409, 503: {bad[:4]}")
    locs = {r.header("Location") for _, r in finals.values()}
    expect(len(locs) == len(finals), f"{len(locs)} payments for {len(finals)} keys")
    for key, (h, r) in finals.items():
        other = c.hosts[(c.hosts.index(h) + 1) % len(c.hosts)]
        problems = replay_problems(r, pay(other, key), f"{key}: replay on {other.name}")
        expect(not problems, "; ".join(problems))
    after = c.stats()
    expect_deltas(before, after, charges=len(finals), payments=len(finals))
    expect(after["in_progress"] == 0, f"{after['in_progress']} keys still in progress")


def sanitizer_reports(c):
    found = []
    for h in c.hosts + [c.provider_home]:
        for log in h.logs:
            try:
                with open(log, errors="replace") as f:
                    mark = has_sanitizer_report(f.read())
            except OSError:
                continue
            if mark:
                found.append(f"{os.path.basename(log)} ({h.name}): {mark}")
    return found


def run_case(c, name, fn, *args):
    if DEADLINE.left() < 20:
        RESULTS.fail(name, "global deadline too close")
        return
    t0 = time.monotonic()
    try:
        fn(c, *args)
    except Check as e:
        RESULTS.fail(name, f"{e}\n{c.log_tail()}")
        return
    except Exception as e:              # noqa: BLE001
        RESULTS.fail(name, f"{type(e).__name__}: {e}\n{c.log_tail()}")
        return
    RESULTS.ok(f"{name} ({time.monotonic() - t0:.1f} s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory")
    ap.add_argument("--suite", default="cluster", help="name on the closing line")
    ap.add_argument("--workers", type=int, default=2, help="worker processes a host")
    ap.add_argument("--lease", type=int, default=5, help="IDEM_LEASE, seconds")
    ap.add_argument("--rounds", type=int, default=20, help="keys of the duplicates case")
    ap.add_argument("--duplicates", type=int, default=50, help="duplicates of each key")
    ap.add_argument("--clients", type=int, default=12,
                    help="concurrent clients while PostgreSQL restarts")
    ap.add_argument("--deadline", type=float, default=240, help="whole run, seconds")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    args = ap.parse_args()
    DEADLINE.reset(args.deadline)
    if not pg.available():
        RESULTS.fail("PostgreSQL", "no server installed (/usr/lib/postgresql/*/bin)")
        return RESULTS.summary(args.suite)
    become_subreaper()
    atexit.register(cleanup_all)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    started = time.monotonic()
    hosts = argparse.Namespace(workers=args.workers, latency_ms=0, keep=args.keep,
                               provider_timeout_ms=10000)
    try:
        c = Cluster(os.path.abspath(args.build), hosts,
                    env={"IDEM_LEASE": str(args.lease)})
    except Exception as e:              # noqa: BLE001
        RESULTS.fail("cluster start", f"{type(e).__name__}: {e}")
        return RESULTS.summary(args.suite)
    c.lease = args.lease
    atexit.register(c.cleanup)
    try:
        c.start()
        note(f"PostgreSQL {c.uri}; provider {c.provider.url}; hosts "
             + ", ".join(f"{h.name} on {h.port}" for h in c.hosts)
             + f" ({args.workers} workers each, IDEM_LEASE={args.lease})")
        a, b = c.hosts
        run_case(c, f"README session on {a.name}, its payment replayed on {b.name}",
                 case_readme, a, b)
        run_case(c, f"README session on {b.name}, its payment replayed on {a.name}",
                 case_readme, b, a)
        run_case(c, f"{args.duplicates} concurrent duplicates split across both hosts, "
                 f"{args.rounds} keys: one charge and one 201 body each",
                 case_duplicates, args.rounds, args.duplicates)
        run_case(c, f"{a.name} killed while its payment is held at the provider: "
                 f"409 on {b.name} until the lease ends, then the take-over, one charge",
                 case_host_killed)
        run_case(c, "PostgreSQL restarted while clients pay through both hosts: "
                 "every key answered, no double charge, no lost completion",
                 case_pg_restart, args.clients, 3)
        found = sanitizer_reports(c)
        RESULTS.record("no sanitizer report in the hosts' logs", found)
    except Exception as e:              # noqa: BLE001
        RESULTS.fail("cluster", f"{type(e).__name__}: {e}\n{c.log_tail()}")
    finally:
        c.cleanup()
    note(f"total: {time.monotonic() - started:.1f} s")
    return RESULTS.summary(args.suite)


if __name__ == "__main__":
    sys.exit(main())
