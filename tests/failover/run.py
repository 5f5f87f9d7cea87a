#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The failover suite: the database primary killed under load.

    python3 tests/failover/run.py --build BUILD_DIR [--kills N] [--keep]

etcd and three Patroni nodes (tests/lib/patroni.py: synchronous_mode,
synchronous_mode_strict, synchronous_node_count 1), the provider service
and two app hosts (lighttpd + spawn-fcgi workers) whose store is every
node in one libpq URI with target_session_attrs=read-write.  Clients pay
fresh keys through both hosts and retry each key, on alternate hosts,
until its 201, while:

  - the primary's node is SIGKILLed (Patroni, the postmaster and its
    backends, by pid) --kills times: Patroni promotes the synchronous
    standby; the killed node is started again and rejoins as a standby
    (pg_rewind), in recovery, not the leader;
  - the synchronous standby's node is SIGKILLed: Patroni names the
    other standby, the leader stays, payments keep flowing.

Then: every answer before a key's 201 was 503 or 409 with Retry-After;
every acknowledged payment replays byte for byte on the other host
(a 201 later lost would come back fresh, without Idempotent-Replayed);
the provider's charges, the store's payments and the keys are equal;
nothing is left in progress.  The longest time without a 201 around each
kill and the number of 503s are printed as "failover: summary ...".

Output: "ok - ..." / "FAIL - ...: why" lines and "failover: N passed, N
failed".  Needs patroni and etcd-server (Debian), and a build with
--enable-fault-points (the hosts' configuration).
"""

import argparse
import atexit
import collections
import itertools
import os
import secrets
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import patroni, servers  # noqa: E402
from lib.cluster import brief, pay  # noqa: E402
from lib.common import (DEADLINE, REPLAY_EXEMPT, Results,  # noqa: E402
                        become_subreaper, has_sanitizer_report, note)
from lib.servers import cleanup_all  # noqa: E402
from lib.web import Reply  # noqa: E402

RESULTS = Results()


class Check(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise Check(why)


def replay_problems(first, again, what):
    if not isinstance(again, Reply):
        return [f"{what}: {brief(again)}"]
    out = []
    if again.status != first.status or again.body != first.body:
        out.append(f"{what}: {again.status} {again.body[:100]!r}, first "
                   f"{first.status} {first.body[:100]!r}")
    if (again.header("Idempotent-Replayed") or "").lower() != "true":
        out.append(f"{what}: not a replay (the payment was lost)")

    def kept(r):
        return sorted((k.lower(), v) for k, v in r.headers
                      if k.lower() not in REPLAY_EXEMPT)
    if kept(again) != kept(first):
        out.append(f"{what}: headers {kept(again)}, first {kept(first)}")
    return out


class Stack:
    """The Patroni cluster, the provider service and the app hosts."""

    def __init__(self, build, args):
        self.build = build
        self.db = patroni.PatroniCluster()
        self.hosts = []
        self.provider_home = None
        self.keep = args.keep
        try:
            self._setup(build, args)
        except BaseException:
            self.cleanup()
            raise

    def _setup(self, build, args):
        hostargs = argparse.Namespace(workers=args.workers, latency_ms=0,
                                      keep=args.keep, provider_timeout_ms=10000)
        self.db.start(timeout=DEADLINE.timeout(180))
        self.db.psql("CREATE DATABASE idem")
        self.uri = self.db.uri("idem")
        p = subprocess.run([os.path.join(build, "idemctl"), "-s", self.uri,
                            "migrate"], capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=DEADLINE.timeout(60))
        if p.returncode != 0:
            raise RuntimeError("idemctl migrate: " + p.stderr.decode()[-300:])
        self.provider_home = servers.ProviderOnly(
            "failover-provider", build,
            argparse.Namespace(**dict(vars(hostargs), provider_service=True)))
        self.provider = self.provider_home.provider
        env = {"IDEM_STORE": self.uri, "IDEM_PROVIDER": "service",
               "IDEM_PROVIDER_URL": self.provider.url,
               "IDEM_PROVIDER_TIMEOUT_MS": "10000",
               "IDEM_LEASE": str(args.lease)}
        keys = seal = secrets_ = None
        for i in range(2):
            h = servers.Lighttpd(f"failover-{chr(ord('a') + i)}", build,
                                 argparse.Namespace(**dict(
                                     vars(hostargs), provider_service=False)))
            # The same accounts, API keys and sealing key on both hosts.
            if keys is None:
                with open(os.path.join(h.state, "keys")) as f:
                    keys = f.read()
                with open(os.path.join(h.state, "secret")) as f:
                    seal = f.read()
                secrets_ = h.secrets
            else:
                with open(os.path.join(h.state, "keys"), "w") as f:
                    f.write(keys)
                with open(os.path.join(h.state, "secret"), "w") as f:
                    f.write(seal)
                h.secrets = secrets_
            h.idem_env.update(env)
            self.hosts.append(h)
        self.provider_home.start()
        for h in self.hosts:
            h.start()

    def stats(self):
        return self.hosts[0].stats()

    def log_tail(self):
        return "\n".join(h.log_tail() for h in self.hosts) + "\n" + self.db.tails()

    def cleanup(self):
        for h in self.hosts + ([self.provider_home] if self.provider_home else []):
            try:
                h.cleanup()
            except Exception:           # noqa: BLE001
                pass
            if h in servers.INSTANCES:
                servers.INSTANCES.remove(h)
        self.hosts, self.provider_home = [], None
        self.db.stop(keep=self.keep)


class Load:
    """Clients paying fresh keys, each retried until its 201; bounded by
    a number of keys and by the deadline."""

    def __init__(self, st, clients, max_keys, lease, pace):
        self.st = st
        self.lock = threading.Lock()
        self.finals = {}                    # key -> (host index, the 201)
        self.acks = []                      # monotonic time of each fresh 201
        self.transient = collections.Counter()
        self.bad = []
        self.stop = threading.Event()
        self.seq = itertools.count()
        self.max_keys = max_keys
        self.lease = lease
        self.pace = pace
        self.threads = [threading.Thread(target=self.client, args=(i,), daemon=True)
                        for i in range(clients)]

    def one_key(self, i, key):
        for attempt in itertools.count():
            if DEADLINE.left() < 20:
                self.bad.append(f"{key}: still no 201 at the deadline")
                return
            hi = (i + attempt) % len(self.st.hosts)
            r = pay(self.st.hosts[hi], key)
            if isinstance(r, Reply) and r.status == 201:
                with self.lock:
                    self.finals[key] = (hi, r)
                    self.acks.append(time.monotonic())
                return
            if isinstance(r, Reply) and r.status in (409, 503):
                with self.lock:
                    self.transient[r.status] += 1
                ra = r.header("Retry-After") or ""
                if not ra.isdigit() or not 1 <= int(ra) <= self.lease:
                    self.bad.append(f"{key}: {r.status} with Retry-After {ra!r}")
                    ra = "1"
                # The client's own back-off, as Retry-After asks.
                time.sleep(min(int(ra), 2) if r.status == 409 else 0.5)
                continue
            self.bad.append(f"{key} on host {hi}: {brief(r)}")
            time.sleep(0.5)

    def client(self, i):
        while not self.stop.is_set():
            n = next(self.seq)
            if n >= self.max_keys:
                return
            self.one_key(i, f"failover-{n}-{secrets.token_hex(6)}")
            time.sleep(self.pace)

    def start(self):
        for th in self.threads:
            th.start()

    def finish(self):
        self.stop.set()
        for th in self.threads:
            th.join(DEADLINE.timeout(120))
        return not any(th.is_alive() for th in self.threads)

    def acked(self):
        with self.lock:
            return len(self.acks)

    def gap_since(self, t):
        """The longest time without a 201 from t to now: the outage a
        kill at t caused (answers in flight at t, committed before it,
        count as before it)."""
        with self.lock:
            times = sorted(a for a in self.acks if a >= t)
        marks = [t] + times
        return max(b - a for a, b in zip(marks, marks[1:])) if times else None

    def wait_acks(self, n, seconds, what):
        """A bounded poll: n more 201s than now."""
        want = self.acked() + n
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if self.acked() >= want:
                return
            time.sleep(0.1)
        raise Check(f"{what}: fewer than {n} payments in {seconds} s")


def rejoined_as_standby(db, rnd, old, new):
    """old, running again, is a standby on the leader's timeline.  Patroni
    says "running" as soon as its PostgreSQL accepts connections; after
    pg_rewind it may restart it once more, and a member's timeline in
    the DCS is what its last loop saw: a bounded poll, which fails with
    what it saw last."""
    seen = {}

    def standby():
        try:
            seen["recovery"] = db.node_query(db.node(old),
                                             "SELECT pg_is_in_recovery()")
        except RuntimeError as e:
            seen["recovery"] = str(e)
            return False
        ms = {m["name"]: m for m in db.members()}
        seen["timelines"] = (ms.get(old, {}).get("timeline"),
                             ms.get(new, {}).get("timeline"))
        seen["leader"] = db.leader()
        return seen["recovery"] == [["t"]] and seen["leader"] == new and \
            seen["timelines"][0] is not None and \
            seen["timelines"][0] == seen["timelines"][1]
    try:
        db.wait(f"kill {rnd}: {old} a standby on {new}'s timeline", standby,
                DEADLINE.timeout(60))
    except RuntimeError as e:
        raise Check(f"{str(e).splitlines()[0]}: in recovery "
                    f"{seen.get('recovery')}, timelines ({old}, {new}) "
                    f"{seen.get('timelines')}, leader {seen.get('leader')}") \
            from None


def kill_primary(st, load, rnd, summary):
    db = st.db
    db.wait_healthy(DEADLINE.timeout(120))
    load.wait_acks(20, DEADLINE.timeout(60), f"kill {rnd}: before")
    old, sync = db.leader(), db.sync_standby()
    expect(old and sync, f"kill {rnd}: no leader or synchronous standby")
    t = time.monotonic()
    db.kill_node(old)
    db.wait(f"kill {rnd}: a new leader", lambda: db.leader() not in (None, old),
            DEADLINE.timeout(90))
    new = db.leader()
    promoted = time.monotonic() - t
    expect(new == sync, f"kill {rnd}: {new} promoted, the synchronous standby "
           f"was {sync}")
    load.wait_acks(10, DEADLINE.timeout(60), f"kill {rnd}: after")
    gap = load.gap_since(t)
    db.start_node(old)
    db.wait_healthy(DEADLINE.timeout(180))
    expect(db.leader() == new, f"kill {rnd}: the leader moved to {db.leader()} "
           f"when {old} came back")
    rejoined_as_standby(db, rnd, old, new)
    note(f"kill {rnd}: {old} killed, {new} promoted in {promoted:.1f} s, "
         f"{gap:.1f} s without a payment, {old} rejoined as a standby")
    summary.append(gap)


def kill_standby(st, load, gaps):
    db = st.db
    db.wait_healthy(DEADLINE.timeout(120))
    load.wait_acks(20, DEADLINE.timeout(60), "standby: before")
    leader, sync = db.leader(), db.sync_standby()
    t = time.monotonic()
    db.kill_node(sync)
    # Payments go on while the standby is away, the leader unchanged.
    load.wait_acks(30, DEADLINE.timeout(60), f"{sync} away")
    db.wait(f"another synchronous standby than {sync}",
            lambda: db.sync_standby() not in (None, sync), DEADLINE.timeout(30))
    gap = load.gap_since(t)
    other = db.sync_standby()
    expect(db.leader() == leader, f"the leader moved to {db.leader()} when "
           f"the standby {sync} was killed")
    db.start_node(sync)
    db.wait_healthy(DEADLINE.timeout(180))
    note(f"standby {sync} killed: {other} made synchronous, {gap:.1f} s "
         f"without a payment, leader {leader} throughout")
    gaps.append(gap)


def check_outcome(st, load, before):
    expect(not load.bad, f"{len(load.bad)} answers other than 201, 409, 503 "
           f"with Retry-After: {load.bad[:4]}")
    finals = dict(load.finals)
    locs = {r.header("Location") for _, r in finals.values()}
    expect(len(locs) == len(finals), f"{len(locs)} payments for {len(finals)} keys")
    problems = []
    work = list(finals.items())
    lock = threading.Lock()

    def replayer():
        while True:
            with lock:
                if not work or len(problems) > 10:
                    return
                key, (hi, r) = work.pop()
            other = st.hosts[(hi + 1) % len(st.hosts)]
            p = replay_problems(r, pay(other, key), f"{key} on {other.name}")
            if p:
                with lock:
                    problems.extend(p)
    ths = [threading.Thread(target=replayer, daemon=True) for _ in range(6)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(DEADLINE.timeout(300))
    expect(not problems, "; ".join(problems[:5]))
    after = st.stats()
    got = {k: after.get(k, 0) - before.get(k, 0) for k in ("charges", "payments")}
    expect(got == {"charges": len(finals), "payments": len(finals)},
           f"{len(finals)} keys, but charges {got['charges']} and payments "
           f"{got['payments']}")
    expect(after.get("in_progress", 0) == 0,
           f"{after.get('in_progress')} keys still in progress")
    return len(finals)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory")
    ap.add_argument("--suite", default="failover")
    ap.add_argument("--kills", type=int, default=3, help="primaries killed")
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--lease", type=int, default=5, help="IDEM_LEASE, seconds")
    ap.add_argument("--max-keys", type=int, default=6000)
    ap.add_argument("--pace", type=float, default=0.05,
                    help="seconds a client waits between keys")
    ap.add_argument("--deadline", type=float, default=600)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    DEADLINE.reset(args.deadline)
    if not patroni.available():
        RESULTS.fail("failover", "patroni, etcd or PostgreSQL not installed")
        return RESULTS.summary(args.suite)
    become_subreaper()
    atexit.register(cleanup_all)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    started = time.monotonic()
    try:
        st = Stack(os.path.abspath(args.build), args)
    except Exception as e:              # noqa: BLE001
        RESULTS.fail("failover start", f"{type(e).__name__}: {e}")
        return RESULTS.summary(args.suite)
    atexit.register(st.cleanup)
    load = None
    try:
        note(f"store {st.uri}; hosts " + ", ".join(
            f"{h.name} on {h.port}" for h in st.hosts)
            + f"; up in {time.monotonic() - started:.1f} s")
        before = st.stats()
        load = Load(st, args.clients, args.max_keys, args.lease, args.pace)
        load.start()
        gaps, sgaps = [], []
        for rnd in range(1, args.kills + 1):
            try:
                kill_primary(st, load, rnd, gaps)
                RESULTS.ok(f"primary killed ({rnd}): the synchronous standby "
                           "promoted, the old primary rejoined as a standby")
            except (Check, RuntimeError) as e:
                RESULTS.fail(f"primary killed ({rnd})", str(e))
                break
        try:
            kill_standby(st, load, sgaps)
            RESULTS.ok("the synchronous standby killed: the other one is "
                       "named, the leader stays, payments flow")
        except (Check, RuntimeError) as e:
            RESULTS.fail("the synchronous standby killed", str(e))
        expect(load.finish(), "clients still running at the deadline")
        n = check_outcome(st, load, before)
        RESULTS.ok(f"{n} acknowledged payments all there, charges = payments "
                   "= keys, only 503 or 409 with Retry-After before a 201")
        found = []
        for h in st.hosts + [st.provider_home]:
            for log in h.logs:
                try:
                    with open(log, errors="replace") as f:
                        m = has_sanitizer_report(f.read())
                except OSError:
                    continue
                if m:
                    found.append(f"{log}: {m}")
        RESULTS.record("no sanitizer report in the hosts' logs", found)
        print(f"{args.suite}: summary {len(gaps)} primary kills, seconds "
              f"without a payment " + " ".join(f"{g:.1f}" for g in gaps)
              + f" (standby killed: " + " ".join(f"{g:.1f}" for g in sgaps)
              + f"), {load.transient[503]} x 503, {load.transient[409]} x 409, "
              f"{n} payments", flush=True)
    except Check as e:
        RESULTS.fail("failover", str(e))
    except Exception as e:              # noqa: BLE001
        RESULTS.fail("failover", f"{type(e).__name__}: {e}\n{st.log_tail()}")
    finally:
        if load is not None:
            load.stop.set()
        st.cleanup()
    note(f"total: {time.monotonic() - started:.1f} s")
    return RESULTS.summary(args.suite)


if __name__ == "__main__":
    sys.exit(main())
