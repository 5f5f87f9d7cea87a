#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The failover suite: the database primary killed, paused, cut off and
slowed under load.

    python3 tests/failover/run.py --build BUILD_DIR [--kills N]
        [--cases LIST] [--keep]

etcd and three Patroni nodes (tests/lib/patroni.py: synchronous_mode,
synchronous_mode_strict, synchronous_node_count 1), the provider service
and two app hosts (lighttpd + spawn-fcgi workers) whose store is every
node in one libpq URI with target_session_attrs=read-write; the second
host reaches each node through a TCP proxy of its own
(tests/lib/faults.py).  Clients pay fresh keys through both hosts and
retry each key, on alternate hosts, until its 201, and a reader a host
reads acknowledged payments back (GET of the 201's Location), while the
cases run, in the order --cases gives (by default all, in this order):

  kill         the primary's node is SIGKILLed (Patroni, the postmaster
               and its backends, by pid) --kills times: Patroni promotes
               the synchronous standby; the killed node is started again
               and rejoins as a standby (pg_rewind), in recovery, not
               the leader;
  standby      the synchronous standby's node is SIGKILLed: Patroni
               names the other standby, the leader stays, payments keep
               flowing;
  pause-pg     the leader's PostgreSQL (the postmaster and its children,
               by pid; Patroni left running) is stopped with SIGSTOP
               until the synchronous standby is promoted past the ttl and
               pays, then continued: it must come back as a standby, the
               new leader staying;
  pause-node   the same with the leader's whole node (Patroni too);
  stall-new-leader
               the leader's PostgreSQL paused until the synchronous
               standby is promoted, then the new leader's Patroni stopped
               and the old primary continued, both so past the ttl, then
               the new leader's Patroni continued;
  partition    refunds of 0.01 of a few acknowledged payments paid
               through both hosts, and the second host cut off from the
               primary by its proxy, which stops forwarding both ways
               with every socket kept open, as a black-holing middlebox
               does, at the moment a refund's claim through it holds
               its payment's row lock with its transaction open: the
               primary must show that session idle in transaction
               holding the lock, a refund through the first host
               waiting on it (PARTITION_TRIES cuts at most, else the
               case fails); payments through the first host, on the
               same account, and its refunds of each payment must not
               stop for more than PARTITION_RESUME_S; then each refund
               answered replays on the other host, each payment's
               amount refunded is its acknowledged refunds' sum, no more
               than its amount, and the store's and the provider's
               refunds are the refunds acknowledged;
  walreceiver  the synchronous standby's WAL receiver stopped (its pid
               from pg_stat_wal_receiver): payments must resume within
               WALRECEIVER_RESUME_S, the leader staying; then continued.

Every case: every answer before a key's 201 is 503 or 409 with
Retry-After; every request is answered within ANSWER_S; after the case
(the cluster healthy again, every other node a standby on the leader's
timeline) each key acknowledged since the case before replays byte for
byte on the other host (a payment lost comes back fresh, without
Idempotent-Replayed: it is counted lost); no read of an acknowledged
payment is answered 404 at any time (503 with Retry-After may be).  At
the end: every key replays again, the provider's charges, the store's
payments and the keys are equal, nothing is left in progress.  A table
gives each case's seconds without a payment, 503s, lost payments (and
refunds), reads answered 404 and requests not answered; the kills'
outages and the
others' are printed as "failover: summary ...".

Output: "ok - ..." / "FAIL - ...: why" lines and "failover: N passed, N
failed".  Needs patroni and etcd-server (Debian), and a build with
--enable-fault-points (the hosts' configuration).
"""

import argparse
import atexit
import collections
import decimal
import http.client
import itertools
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import faults, patroni, servers  # noqa: E402
from lib.cluster import BODY, brief  # noqa: E402
from lib.common import (DEADLINE, HOST, REPLAY_EXEMPT, Results,  # noqa: E402
                        become_subreaper, has_sanitizer_report, note)
from lib.servers import cleanup_all  # noqa: E402
from lib.web import Reply, http_request  # noqa: E402

RESULTS = Results()

# How long a client waits for an answer: a host must answer within it
# whatever its store does (each of its waits on a server is bounded).
ANSWER_S = 30
# How soon payments, and refunds of the payment whose row lock that
# session holds, must resume on the host that reaches the primary when
# the other host's session is left idle in transaction (the server's
# idle_in_transaction_session_timeout ends it), and when the
# synchronous standby's WAL receiver stalls (wal_sender_timeout ends its
# stream, and Patroni names the other standby).
PARTITION_RESUME_S = 15
WALRECEIVER_RESUME_S = 20
# The partition case: how many times it cuts the second host off, each
# time once a refund's claim through it holds the payment's row lock (at
# most CATCH_S for such a moment), until the server shows that session
# idle in transaction with a refund through the first host waiting on it
# (within BLOCK_S); the payments refunded, 0.01 a refund.
PARTITION_TRIES = 4
CATCH_S = 10
BLOCK_S = 4
REFUND_PAYMENTS = 3
REFUND_BODY = b'{"amount": 0.01}'
REFUND_AMOUNT = decimal.Decimal("0.01")
# What a refund's claim sends, in order, on a session whose transaction
# then holds the payment's row lock: the claim's count of the scope's
# records (pg_quota_add), then the first row lock the claim's hook takes
# (pg_row_read), on the payment's refund totals (refund_totals_read).
CLAIM_ROW_LOCKED = (b"INSERT INTO idem_quota", b"pg_advisory_xact_lock(")
CASES = ("kill", "standby", "pause-pg", "pause-node", "stall-new-leader",
         "partition", "walreceiver")


def pay(host, key, body=BODY, account="acct_alpha"):
    """POST /payments to host with key: the Reply, or the exception
    that stood in for one (a reset, no answer within ANSWER_S)."""
    conn = http.client.HTTPConnection(HOST, host.port,
                                      timeout=DEADLINE.timeout(ANSWER_S))
    try:
        return http_request(host.port, "POST", "/payments", body, {
            "Authorization": f"Bearer {host.secrets[account]}",
            "Content-Type": "application/json",
            "Idempotency-Key": f'"{key}"'}, conn=conn)
    except (OSError, http.client.HTTPException) as e:
        return e


def refund(host, path, key, account="acct_alpha"):
    """POST path/refunds (path a payment's) to host with key, a refund of
    REFUND_AMOUNT: the Reply or the exception."""
    conn = http.client.HTTPConnection(HOST, host.port,
                                      timeout=DEADLINE.timeout(ANSWER_S))
    try:
        return http_request(host.port, "POST", path + "/refunds",
                            REFUND_BODY, {
                                "Authorization":
                                    f"Bearer {host.secrets[account]}",
                                "Content-Type": "application/json",
                                "Idempotency-Key": f'"{key}"'}, conn=conn)
    except (OSError, http.client.HTTPException) as e:
        return e


def read_payment(host, path, account="acct_alpha"):
    """GET path (a payment's Location) from host: the Reply or the
    exception."""
    conn = http.client.HTTPConnection(HOST, host.port,
                                      timeout=DEADLINE.timeout(ANSWER_S))
    try:
        return http_request(host.port, "GET", path, None, {
            "Authorization": f"Bearer {host.secrets[account]}"}, conn=conn)
    except (OSError, http.client.HTTPException) as e:
        return e


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
        self.proxies = {}
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
        self.db.create_database("idem")
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
        # The second host reaches each node through a proxy of its own,
        # which the partition case stops; the first connects directly.
        self.proxies = {n.name: faults.Proxy(n.port, n.name)
                        for n in self.db.nodes}
        self.proxied_uri = ("postgresql://postgres@" + ",".join(
            f"127.0.0.1:{self.proxies[n.name].port}" for n in self.db.nodes)
            + "/idem?target_session_attrs=read-write")
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
            if i == 1:
                h.idem_env["IDEM_STORE"] = self.proxied_uri
            self.hosts.append(h)
        self.provider_home.start()
        for h in self.hosts:
            h.start()

    def stats(self):
        return self.hosts[0].stats()

    def log_tail(self):
        return "\n".join(h.log_tail() for h in self.hosts) + "\n" + self.db.tails()

    def cleanup(self):
        faults.resume_all()
        for h in self.hosts + ([self.provider_home] if self.provider_home else []):
            try:
                h.cleanup()
            except Exception:           # noqa: BLE001
                pass
            if h in servers.INSTANCES:
                servers.INSTANCES.remove(h)
        self.hosts, self.provider_home = [], None
        for x in self.proxies.values():
            x.close()
        self.proxies = {}
        self.db.stop(keep=self.keep)


def back_off(load, r, now, what):
    """A 409 or 503 that a client of load (a Load or Refunds: its lock,
    refusals, bad and lease) got: a 503 counted as a refusal, its
    Retry-After checked (1 to the lease), and the client's own back-off,
    as Retry-After asks."""
    if r.status == 503:
        with load.lock:
            load.refusals.append(now)
    ra = r.header("Retry-After") or ""
    if not ra.isdigit() or not 1 <= int(ra) <= load.lease:
        load.bad.append((now, f"{what}: {r.status} with Retry-After {ra!r}"))
        ra = "1"
    time.sleep(min(int(ra), 2) if r.status == 409 else 0.5)


class Load:
    """Clients paying fresh keys, each retried until its 201; bounded by
    a number of keys and by the deadline."""

    def __init__(self, st, clients, max_keys, lease, pace):
        self.st = st
        self.lock = threading.Lock()
        self.finals = {}                    # key -> (host index, the 201)
        self.acks = []                      # (monotonic time, host index) of each fresh 201
        self.refusals = []                  # monotonic time of each 503
        self.transient = collections.Counter()
        self.bad = []                       # (monotonic time, what)
        self.unanswered = []                # (monotonic time, host name)
        self.stop = threading.Event()
        self.seq = itertools.count()
        self.max_keys = max_keys
        self.lease = lease
        self.pace = pace
        self.threads = [threading.Thread(target=self.client, args=(i,), daemon=True)
                        for i in range(clients)]

    def one_key(self, i, key, pin=None):
        for attempt in itertools.count():
            if DEADLINE.left() < 20:
                self.bad.append((time.monotonic(),
                                 f"{key}: still no 201 at the deadline"))
                return
            hi = pin if pin is not None else (i + attempt) % len(self.st.hosts)
            r = pay(self.st.hosts[hi], key)
            now = time.monotonic()
            if isinstance(r, Reply) and r.status == 201:
                with self.lock:
                    self.finals[key] = (hi, r)
                    self.acks.append((now, hi))
                return
            if isinstance(r, Reply) and r.status in (409, 503):
                with self.lock:
                    self.transient[r.status] += 1
                back_off(self, r, now, key)
                continue
            if isinstance(r, TimeoutError):
                with self.lock:
                    self.unanswered.append((now, self.st.hosts[hi].name))
                continue
            self.bad.append((now, f"{key} on host {hi}: {brief(r)}"))
            time.sleep(0.5)

    def client(self, i):
        while not self.stop.is_set():
            n = next(self.seq)
            if n >= self.max_keys:
                return
            self.one_key(i, f"failover-{n}-{secrets.token_hex(6)}")
            time.sleep(self.pace)

    def probe(self, hi, stop):
        """Fresh keys paid through host hi alone until stop is set."""
        while not stop.is_set() and not self.stop.is_set():
            self.one_key(0, f"failover-probe-{next(self.seq)}-"
                         f"{secrets.token_hex(6)}", pin=hi)
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

    def gap(self, t, end=None, host=None):
        """The longest time without a 201 (through host, if given) from
        t to end (now): the outage a fault at t caused (answers in flight
        at t, committed before it, count as before it)."""
        end = time.monotonic() if end is None else end
        with self.lock:
            times = sorted(a for a, hi in self.acks
                           if t <= a <= end and host in (None, hi))
        marks = [t] + times + [end]
        return max(b - a for a, b in zip(marks, marks[1:]))

    def wait_acks(self, n, seconds, what, host=None):
        """A bounded poll: n more 201s (through host, if given) than now."""
        def count():
            with self.lock:
                return sum(1 for _, hi in self.acks if host in (None, hi))
        want = count() + n
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if count() >= want:
                return
            time.sleep(0.1)
        raise Check(f"{what}: fewer than {n} payments in {seconds:.0f} s")


class Refunds:
    """Refunds of REFUND_AMOUNT of a few acknowledged payments: a client
    a payment a host, each paying fresh keys through its host alone,
    each key retried there until it is answered for good (201, or the
    stored 400 when nothing is left of the payment); bounded by the
    deadline."""

    def __init__(self, st, paths, lease, pace=0.05):
        self.st = st
        self.paths = paths                  # the payments' paths
        self.lease = lease
        self.pace = pace
        self.lock = threading.Lock()
        self.finals = {}                    # key -> (host index, the final answer)
        self.path_of = {}                   # key -> the payment's path
        self.acks = []                      # (monotonic time, host index, path) of each fresh 201
        self.refusals = []                  # monotonic time of each 503
        self.bad = []                       # (monotonic time, what)
        self.unanswered = []                # (monotonic time, host name)
        self.stop = threading.Event()
        self.seq = itertools.count()
        self.threads = [threading.Thread(target=self.client, args=(hi, p),
                                         daemon=True)
                        for p in paths for hi in range(len(st.hosts))]

    def one_key(self, hi, path, key):
        host = self.st.hosts[hi]
        with self.lock:
            self.path_of[key] = path
        while True:
            if DEADLINE.left() < 20:
                self.bad.append((time.monotonic(),
                                 f"refund {key}: not answered for good at "
                                 "the deadline"))
                return
            r = refund(host, path, key)
            now = time.monotonic()
            if isinstance(r, Reply) and (r.status == 201 or (
                    r.status == 400 and b"refund-exceeds-payment" in r.body)):
                with self.lock:
                    self.finals[key] = (hi, r)
                    if r.status == 201:
                        self.acks.append((now, hi, path))
                return
            if isinstance(r, Reply) and r.status in (409, 503):
                back_off(self, r, now, f"refund {key}")
                continue
            if isinstance(r, TimeoutError):
                with self.lock:
                    self.unanswered.append((now, host.name))
                continue
            self.bad.append((now, f"refund {key} on {host.name}: {brief(r)}"))
            time.sleep(0.5)

    def client(self, hi, path):
        while not self.stop.is_set():
            self.one_key(hi, path, f"failover-refund-{next(self.seq)}-"
                         f"{secrets.token_hex(6)}")
            time.sleep(self.pace)

    def start(self):
        for th in self.threads:
            th.start()

    def finish(self):
        self.stop.set()
        for th in self.threads:
            th.join(DEADLINE.timeout(ANSWER_S * 2))
        return not any(th.is_alive() for th in self.threads)

    def wait_acks(self, n, seconds, what, host):
        """A bounded poll: n more 201s through host for each payment."""
        def counts():
            with self.lock:
                got = collections.Counter(p for _, hi, p in self.acks
                                          if hi == host)
            return [got[p] for p in self.paths]
        want = [k + n for k in counts()]
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if all(k >= w for k, w in zip(counts(), want)):
                return
            time.sleep(0.1)
        raise Check(f"{what}: fewer than {n} refunds of each payment in "
                    f"{seconds:.0f} s")

    def gap(self, t, end, host, path):
        """The longest time from t to end without a refund of path
        acknowledged through host."""
        with self.lock:
            times = sorted(a for a, hi, p in self.acks
                           if t <= a <= end and hi == host and p == path)
        marks = [t] + times + [end]
        return max(b - a for a, b in zip(marks, marks[1:]))


class Readers:
    """A thread a host reading acknowledged payments back (GET of the
    201's Location, the same account's key), the latest acknowledged
    and older ones by turns, one read every pace seconds.  A payment
    acknowledged must never be answered 404; 503 with Retry-After is a
    host that cannot tell."""

    def __init__(self, st, load, lost, pace=0.1):
        self.st = st
        self.load = load
        self.lost = lost        # keys found lost, not read again
        self.pace = pace
        self.lock = threading.Lock()
        self.events = []        # (monotonic time, host name, kind, what)
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.reader, args=(h,),
                                         daemon=True) for h in st.hosts]

    def start(self):
        for th in self.threads:
            th.start()

    def finish(self):
        self.stop.set()
        for th in self.threads:
            th.join(DEADLINE.timeout(60))

    def reader(self, host):
        n = 0
        while not self.stop.wait(self.pace):
            with self.load.lock:
                keys = [k for k in self.load.finals if k not in self.lost]
            if not keys:
                continue
            n += 1
            key = keys[-1] if n % 2 else random.choice(keys)
            with self.load.lock:
                loc = self.load.finals[key][1].header("Location") or ""
            r = read_payment(host, urllib.parse.urlsplit(loc).path or loc)
            now = time.monotonic()
            if isinstance(r, Reply) and r.status == 200:
                kind = "200"
            elif isinstance(r, Reply) and r.status == 404:
                kind = "404"
            elif isinstance(r, Reply) and r.status == 503 and \
                    (r.header("Retry-After") or "").isdigit():
                kind = "503"
            elif isinstance(r, TimeoutError):
                kind = "no answer"
            else:
                kind = "other"
            with self.lock:
                self.events.append((now, host.name, kind,
                                    f"{key} {loc} on {host.name}: {brief(r)}"))

    def between(self, t0, t1):
        with self.lock:
            return [e for e in self.events if t0 <= e[0] < t1]


class Case:
    """One fault: its outage and what it cost.  Keys acknowledged, reads
    and refusals are counted from the end of the case before it to the
    end of this one."""

    def __init__(self, name, short):
        self.name = name
        self.short = short      # its name in the table
        self.t0 = self.t1 = None
        self.gap = None
        self.refusals = 0
        self.lost = []
        self.reads = collections.Counter()
        self.bad_reads = []
        self.unanswered = 0
        self.bad = []
        self.keys = 0
        self.why = None
        self.problems = []      # what went wrong, the case going on
        self.caught = None      # partition: what the cut caught
        self.refunds = None     # partition: its Refunds
        self.refunds_lost = []  # (key, what was wrong) of refunds lost
        self.outcome = ""       # said after the case's figures when it passes
        self.notes = []

    def note(self, msg):
        self.notes.append(msg)
        note(f"{self.name}: {msg}")

    def wait_acks(self, load, n, seconds, what):
        """load.wait_acks, a shortfall noted as a problem of the case,
        which goes on."""
        try:
            load.wait_acks(n, DEADLINE.timeout(seconds), what)
        except Check as e:
            self.problems.append(str(e))
            self.note(str(e))


def standbys_follow(db, what):
    """Every node but the leader in recovery on the leader's timeline.
    Patroni says "running" as soon as a PostgreSQL accepts connections;
    after pg_rewind it may restart it once more, and a member's timeline
    in the DCS is what its last loop saw: a bounded poll, which fails
    with what it saw last."""
    seen = {}

    def follow():
        seen["leader"] = leader = db.leader()
        if leader is None:
            return False
        ms = {m["name"]: m for m in db.members()}
        seen["timelines"] = {n: m.get("timeline") for n, m in ms.items()}
        for n in db.nodes:
            if n.name == leader:
                continue
            try:
                rec = db.node_query(n, "SELECT pg_is_in_recovery()")
            except RuntimeError as e:
                seen["recovery"] = f"{n.name}: {e}"
                return False
            seen["recovery"] = f"{n.name}: {rec}"
            tl = ms.get(n.name, {}).get("timeline")
            if rec != [["t"]] or tl is None or \
                    tl != ms.get(leader, {}).get("timeline"):
                return False
        return True
    try:
        db.wait(f"{what}: every other node a standby on the leader's "
                "timeline", follow, DEADLINE.timeout(90))
    except RuntimeError as e:
        raise Check(f"{str(e).splitlines()[0]}: leader {seen.get('leader')}, "
                    f"timelines {seen.get('timelines')}, in recovery "
                    f"{seen.get('recovery')}") from None


def settle(st, what):
    st.db.wait_healthy(DEADLINE.timeout(180))
    standbys_follow(st.db, what)


def before_fault(st, load, what):
    st.db.wait_healthy(DEADLINE.timeout(120))
    load.wait_acks(20, DEADLINE.timeout(60), f"{what}: before")
    leader, sync = st.db.leader(), st.db.sync_standby()
    expect(leader and sync, f"{what}: no leader or synchronous standby")
    return leader, sync


def kill_primary(st, load, c):
    db = st.db
    old, sync = before_fault(st, load, c.name)
    c.t0 = t = time.monotonic()
    db.kill_node(old)
    db.wait(f"{c.name}: a new leader", lambda: db.leader() not in (None, old),
            DEADLINE.timeout(90))
    new = db.leader()
    promoted = time.monotonic() - t
    expect(new == sync, f"{new} promoted, the synchronous standby was {sync}")
    load.wait_acks(10, DEADLINE.timeout(60), f"{c.name}: after")
    db.start_node(old)
    settle(st, c.name)
    expect(db.leader() == new, f"the leader moved to {db.leader()} when "
           f"{old} came back")
    c.note(f"{old} killed, {new} promoted in {promoted:.1f} s, {old} "
           "rejoined as a standby")


def kill_standby(st, load, c):
    db = st.db
    leader, sync = before_fault(st, load, c.name)
    c.t0 = time.monotonic()
    db.kill_node(sync)
    # Payments go on while the standby is away, the leader unchanged.
    load.wait_acks(30, DEADLINE.timeout(60), f"{sync} away")
    db.wait(f"another synchronous standby than {sync}",
            lambda: db.sync_standby() not in (None, sync), DEADLINE.timeout(30))
    other = db.sync_standby()
    expect(db.leader() == leader, f"the leader moved to {db.leader()} when "
           f"the standby {sync} was killed")
    db.start_node(sync)
    settle(st, c.name)
    c.note(f"{sync} killed: {other} made synchronous, leader {leader} "
           "throughout")


def new_leader(db, c, old, sync, paused):
    """A bounded poll for the leader Patroni promotes while old is
    paused: it must be the synchronous standby."""
    db.wait(f"{c.name}: a leader other than {old}",
            lambda: db.leader() not in (None, old), DEADLINE.timeout(90))
    new = db.leader()
    c.note(f"{sync} promoted {paused.held():.1f} s after {old} was paused")
    expect(new == sync, f"{new} promoted, the synchronous standby was {sync}")
    return new


def pause_primary(st, load, c, whole):
    """The leader's PostgreSQL (whole: its Patroni too) stopped past the
    ttl, until the synchronous standby is promoted and pays, then
    continued: it must come back as a standby of the new leader, which
    stays the leader."""
    db = st.db
    old, sync = before_fault(st, load, c.name)
    c.t0 = time.monotonic()
    node = db.node(old)
    p = faults.pause_node(node) if whole else faults.pause_postgres(node)
    try:
        expect(p.pids, f"{old}: nothing to pause")
        new = new_leader(db, c, old, sync, p)
        c.wait_acks(load, 10, 60, f"payments on {new} with {old} paused")
    finally:
        held = p.held()
        p.resume()
    c.note(f"{old} continued after {held:.1f} s")
    settle(st, c.name)
    expect(db.leader() == new, f"the leader moved to {db.leader()} when "
           f"{old} was continued")
    load.wait_acks(10, DEADLINE.timeout(60), f"{c.name}: after")


def stall_new_leader(st, load, c):
    """The leader's PostgreSQL paused until the synchronous standby is
    promoted; then the new leader's Patroni stopped, the old leader's
    PostgreSQL continued (a primary still, until its Patroni demotes
    it), and both left so past the ttl, when nothing refreshes the new
    leader's key; then the new leader's Patroni continued."""
    db = st.db
    old, sync = before_fault(st, load, c.name)
    c.t0 = time.monotonic()
    pa = faults.pause_postgres(db.node(old))
    pb = None
    try:
        expect(pa.pids, f"{old}: nothing to pause")
        new = new_leader(db, c, old, sync, pa)
        c.wait_acks(load, 5, 60, f"payments on {new} with {old} paused")
        pb = faults.pause_patroni(db.node(new))
        pa.resume()
        # The fault's length, not a synchronisation: the ttl passes
        # with the new leader's Patroni silent and the old primary live.
        end = time.monotonic() + patroni.TTL + 2 * patroni.LOOP_WAIT + 1
        while time.monotonic() < end:
            time.sleep(0.2)
        c.note(f"{new}'s Patroni stopped {pb.held():.1f} s with {old} "
               f"continued; leader then {db.leader()}")
    finally:
        pa.resume()
        if pb is not None:
            pb.resume()
    settle(st, c.name)
    c.note(f"leader {db.leader()} once settled")
    load.wait_acks(10, DEADLINE.timeout(60), f"{c.name}: after")


def held_idle(db, node, port, others):
    """The session on node from client port port, as a dict: its pid and
    state, the exclusive advisory locks it holds (a row's lock, or a
    scope's gate taken alone), the tables it holds row locks in, and
    how many sessions from other ports than others wait on it; None when
    there is none."""
    rows = db.node_query(node, (
        "SELECT a.pid, a.state, "
        "(SELECT count(*) FROM pg_locks l WHERE l.pid = a.pid AND "
        "l.granted AND l.locktype = 'advisory' AND "
        "l.mode = 'ExclusiveLock'), "
        "(SELECT coalesce(string_agg(DISTINCT c.relname::text, ' '), '') "
        "FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE "
        "l.pid = a.pid AND l.granted AND c.relkind = 'r' AND "
        "l.mode IN ('RowShareLock', 'RowExclusiveLock')), "
        "(SELECT count(*) FROM pg_stat_activity w WHERE a.pid = "
        "ANY(pg_blocking_pids(w.pid)) AND w.client_port NOT IN ("
        + ",".join(str(p) for p in sorted(set(others) | {port})) + ")) "
        f"FROM pg_stat_activity a WHERE a.client_port = {int(port)}"),
        db="idem")
    for r in rows:
        if len(r) == 5:
            return {"pid": int(r[0]), "state": r[1], "locks": int(r[2]),
                    "tables": r[3], "waiting": int(r[4])}
    return None


def idle_holding(db, node, ports):
    """How many sessions on node from the given client ports are idle in
    a transaction holding an exclusive advisory lock."""
    rows = db.node_query(node, (
        "SELECT count(*) FROM pg_stat_activity a WHERE a.state LIKE "
        "'idle in transaction%' AND a.client_port IN ("
        + ",".join(str(p) for p in sorted(ports)) + ") AND EXISTS (SELECT 1 "
        "FROM pg_locks l WHERE l.pid = a.pid AND l.granted AND "
        "l.locktype = 'advisory' AND l.mode = 'ExclusiveLock')"))
    return int(rows[0][0]) if rows and rows[0] else 0


def held_payment_lock(h):
    """Whether h (held_idle's) is a session left idle in transaction
    holding a lock another session waits for."""
    return h is not None and h["state"].startswith("idle in transaction") \
        and h["locks"] > 0 and h["waiting"] > 0


def refund_outcome(st, c, refunds, before):
    """After the partition case: each payment's amount refunded (GET of
    the payment) is what its acknowledged refunds add up to, and no
    more than its amount; the store's refunds and the provider's are
    the refunds acknowledged; every refund answered for good replays on
    the other host (a refund lost comes back fresh: counted lost)."""
    with refunds.lock:
        finals = dict(refunds.finals)
        path_of = dict(refunds.path_of)
    acked = collections.Counter(path_of[k] for k, (_, r) in finals.items()
                                if r.status == 201)
    n = sum(acked.values())
    for p in refunds.paths:
        end = time.monotonic() + 60
        while True:
            r = read_payment(st.hosts[0], p)
            if not (isinstance(r, Reply) and r.status == 503) or \
                    time.monotonic() > end:
                break
            time.sleep(0.5)
        if not (isinstance(r, Reply) and r.status == 200):
            c.problems.append(f"GET {p}: {brief(r)}")
            continue
        body = json.loads(r.body, parse_float=decimal.Decimal)
        paid = decimal.Decimal(body.get("amount", 0))
        got = decimal.Decimal(body.get("amount_refunded", 0))
        if got > paid:
            c.problems.append(f"{p}: {got} refunded of {paid}")
        if got != acked[p] * REFUND_AMOUNT:
            c.problems.append(f"{p}: {got} refunded, {acked[p]} refunds of "
                              f"{REFUND_AMOUNT} acknowledged")
    after = st.stats()
    for k in ("refunds", "provider_refunds"):
        d = after.get(k, 0) - before.get(k, 0)
        if d != n:
            c.problems.append(f"{n} refunds acknowledged, but {k} {d}")
    problems = verify_keys(st, list(finals.items()),
                           send=lambda h, k: refund(h, path_of[k], k))
    c.refunds_lost = sorted(problems.items())
    return n


def partition(st, load, c, attempts=PARTITION_TRIES):
    """The second host cut off from the primary by its proxy (both
    directions, sockets kept open) while payments go on and refunds of
    a few acknowledged payments are paid through both hosts: at the
    moment the server's answer says that the transaction of a refund's
    claim through that host is open, the claim having taken the
    payment's row lock (CLAIM_ROW_LOCKED sent).  The primary must then
    show that session idle in transaction holding an exclusive advisory
    lock with a session of the first host waiting on it (within
    BLOCK_S); until one is caught the partition is lifted and tried
    again, attempts in all, and the case fails when none is.  While the
    partition lasts (PARTITION_RESUME_S and 5 s more), neither payments
    through the first host nor its refunds of each payment may stop for
    longer than PARTITION_RESUME_S.  Then refund_outcome."""
    db = st.db
    leader, _ = before_fault(st, load, c.name)
    node, x = db.node(leader), st.proxies[leader]
    cut, direct = st.hosts[1].name, st.hosts[0].name
    with load.lock:
        paths = [urllib.parse.urlsplit(r.header("Location") or "").path
                 for _, r in list(load.finals.values())[-REFUND_PAYMENTS:]]
    before = st.stats()
    refunds = c.refunds = Refunds(st, paths, load.lease)
    stop_probe = threading.Event()
    probe = threading.Thread(target=load.probe, args=(0, stop_probe),
                             daemon=True)
    probe.start()
    refunds.start()
    found = None
    try:
        for hi, h in enumerate(st.hosts):
            refunds.wait_acks(2, DEADLINE.timeout(60), f"{c.name}: refunds "
                              f"through {h.name} before the cut", hi)
        c.t0 = time.monotonic()
        for attempt in range(1, attempts + 1):
            x.stop_in_transaction(after=CLAIM_ROW_LOCKED)
            end = time.monotonic() + CATCH_S
            while x.caught is None and time.monotonic() < end:
                time.sleep(0.05)
            x.disarm()
            if x.caught is None:
                c.note(f"attempt {attempt}: no refund's claim through {cut} "
                       f"seen open with a row lock in {CATCH_S} s")
                continue
            t = x.stopped_at
            # The server has what reached it before the stop: a bounded
            # poll for a refund through the first host waiting on the
            # session cut off.
            h = None
            while time.monotonic() < t + BLOCK_S:
                h = held_idle(db, node, x.caught, x.upstream_ports())
                if h is None or held_payment_lock(h):
                    break
                time.sleep(0.2)
            c.note(f"attempt {attempt}: {cut} cut off from {leader} with a "
                   "refund's claim open; its session " + (
                       "gone" if h is None else
                       f"pid {h['pid']} {h['state']}, {h['locks']} "
                       "exclusive advisory locks, row locks in "
                       f"{h['tables'] or 'no table'}, {h['waiting']} sessions "
                       f"of {direct} waiting on it")
                   + f"; {idle_holding(db, node, x.upstream_ports())} "
                   f"sessions of {cut} idle in transaction holding one")
            if held_payment_lock(h):
                found = h
                break
            x.resume()
        c.caught = 1 if found else 0
        if found is not None:
            watch(st, load, c, refunds, node, x, t, found)
        else:
            c.problems.append(
                f"no session of {cut} caught idle in transaction holding a "
                f"lock that {direct} waits for, in {attempts} attempts")
    finally:
        x.resume()
        stop_probe.set()
        probe.join(DEADLINE.timeout(ANSWER_S + 10))
        if not refunds.finish():
            c.problems.append("refund clients still running at the deadline")
    settle(st, c.name)
    n = refund_outcome(st, c, refunds, before)
    c.outcome += (f"; {n} refunds of {len(paths)} payments acknowledged "
                  "through both hosts, none lost, none past its payment")
    load.wait_acks(10, DEADLINE.timeout(60), f"{c.name}: after")


def watch(st, load, c, refunds, node, x, t, found):
    """The partition held from t, when found (held_idle's, a session of
    x's on node) was caught, past the bound on the first host's outage:
    whether the server ends the session, and how long payments and each
    payment's refunds through the first host stop."""
    db = st.db
    cut, direct = st.hosts[1].name, st.hosts[0].name
    # The fault's length: the partition holds past the bound.
    end = t + PARTITION_RESUME_S + 5
    gone, waiting = None, found["waiting"]
    while time.monotonic() < end:
        if gone is None:
            h = held_idle(db, node, x.caught, x.upstream_ports())
            if h is None:
                gone = time.monotonic() - t
            else:
                waiting = max(waiting, h["waiting"])
        time.sleep(0.2)
    watched = time.monotonic()
    c.note("the caught session " + (
        f"ended by the server after {gone:.1f} s" if gone is not None
        else f"still there after {watched - t:.1f} s")
        + f"; at most {waiting} sessions of {direct} waiting on it")
    gaps = [refunds.gap(t, watched, 0, p) for p in refunds.paths]
    c.note("at most " + ", ".join(f"{g:.1f}" for g in gaps)
           + f" s without a refund of each payment through {direct} "
           "during the partition")
    for p, g in zip(refunds.paths, gaps):
        if g > PARTITION_RESUME_S:
            c.problems.append(
                f"refunds of {p} through {direct} stopped for {g:.1f} s "
                f"while {cut} was cut off (bound {PARTITION_RESUME_S} s)")
    pays = load.gap(t, watched, host=0)
    c.note(f"{pays:.1f} s at most without a payment through {direct} "
           "during the partition")
    if pays > PARTITION_RESUME_S:
        c.problems.append(
            f"payments through {direct} stopped for {pays:.1f} s while "
            f"{cut} was cut off (bound {PARTITION_RESUME_S} s)")
    c.outcome = (f"; a claim's session of {cut} caught idle in transaction "
                 "holding its payment's row lock, "
                 + (f"ended by the server after {gone:.1f} s"
                    if gone is not None else "never ended")
                 + f", refunds through {direct} resumed within "
                 f"{max(gaps):.1f} s")


def stall_walreceiver(st, load, c):
    """The synchronous standby's WAL receiver stopped: payments must
    resume within WALRECEIVER_RESUME_S (its stream ends past
    wal_sender_timeout, and Patroni names the other standby), the
    leader unchanged; then continued."""
    db = st.db
    leader, sync = before_fault(st, load, c.name)
    pid = faults.walreceiver_pid(db, db.node(sync))
    expect(pid, f"{sync}: no WAL receiver")
    c.t0 = t = time.monotonic()
    p = faults.Paused([pid])
    try:
        load.wait_acks(10, DEADLINE.timeout(60),
                       f"{c.name}: payments with {sync}'s WAL receiver stopped")
        c.note(f"{sync}'s WAL receiver (pid {pid}) stopped; synchronous "
               f"standby now {db.sync_standby()}")
    finally:
        p.resume()
    gap = load.gap(t)
    expect(gap <= WALRECEIVER_RESUME_S, f"{gap:.1f} s without a payment "
           f"(bound {WALRECEIVER_RESUME_S} s)")
    settle(st, c.name)
    expect(db.leader() == leader, f"the leader moved to {db.leader()}")


def verify_keys(st, keys, deadline_s=60, send=pay):
    """Each acknowledged key replayed on the host that did not answer its
    201 (send(host, key): a payment's POST, by default), retried past
    503 and 409: the keys whose replay is not the 201 byte for byte,
    with what was wrong."""
    problems = {}
    work = list(keys)
    lock = threading.Lock()

    def replayer():
        while True:
            with lock:
                if not work:
                    return
                key, (hi, r) = work.pop()
            other = st.hosts[(hi + 1) % len(st.hosts)]
            end = time.monotonic() + deadline_s
            while True:
                again = send(other, key)
                if not (isinstance(again, Reply) and again.status in
                        (409, 503)) or time.monotonic() > end:
                    break
                time.sleep(0.5)
            p = replay_problems(r, again, f"{key} on {other.name}")
            if p:
                with lock:
                    problems[key] = p
    ths = [threading.Thread(target=replayer, daemon=True) for _ in range(6)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(DEADLINE.timeout(300))
    return problems


def close_case(st, load, readers, c, since, lost_before):
    """c's figures over [since, now): its keys replayed, its reads
    counted.  Returns now, where the next case's figures start."""
    now = time.monotonic()
    with load.lock:
        n = len(load.acks)
        keys = [(k, v) for k, v in load.finals.items()]
    # Keys are in the order of their 201s, as finals was filled.
    times = [a for a, _ in load.acks[:n]]
    mine = [kv for kv, a in zip(keys, times) if since <= a < now] \
        if len(times) == len(keys) else \
        [kv for kv in keys if kv[0] not in lost_before]
    c.keys = len(mine)
    problems = verify_keys(st, mine)
    c.lost = sorted(problems.items())
    lost_before.update(problems)
    for e in readers.between(since, now):
        c.reads[e[2]] += 1
        if e[2] in ("404", "other"):
            c.bad_reads.append(e[3])
    with load.lock:
        c.refusals = sum(1 for a in load.refusals if since <= a < now)
        c.unanswered = sum(1 for a, _ in load.unanswered if since <= a < now)
        c.bad = [w for a, w in load.bad if since <= a < now]
    if c.refunds is not None:
        r = c.refunds
        with r.lock:
            c.refusals += len(r.refusals)
            c.unanswered += len(r.unanswered)
            c.bad += [w for _, w in r.bad]
    if c.t0 is not None:
        c.gap = load.gap(c.t0, c.t1)
    return now


def report_case(c):
    why = list(c.problems) + ([c.why] if c.why else [])
    if c.lost:
        why.append(f"{len(c.lost)} acknowledged payments lost: "
                   + "; ".join(p for _, ps in c.lost[:3] for p in ps[:1]))
    if c.refunds_lost:
        why.append(f"{len(c.refunds_lost)} acknowledged refunds lost: "
                   + "; ".join(p for _, ps in c.refunds_lost[:3]
                               for p in ps[:1]))
    if c.reads["404"]:
        why.append(f"{c.reads['404']} reads of acknowledged payments "
                   "answered 404: " + "; ".join(
                       b for b in c.bad_reads if " 404 " in b)[:300])
    if c.reads["other"]:
        why.append(f"{c.reads['other']} reads answered neither 200, 404 "
                   "nor 503 with Retry-After: " + "; ".join(
                       b for b in c.bad_reads if " 404 " not in b)[:300])
    if c.unanswered or c.reads["no answer"]:
        why.append(f"{c.unanswered} payments and {c.reads['no answer']} "
                   f"reads not answered within {ANSWER_S} s")
    if c.bad:
        why.append(f"{len(c.bad)} answers other than 201, 409, 503 with "
                   f"Retry-After: {c.bad[:3]}")
    if why:
        RESULTS.fail(c.name, "\n".join(why))
    else:
        RESULTS.ok(f"{c.name}: {c.keys} payments acknowledged, none lost, "
                   f"no acknowledged payment read as 404{c.outcome}")


def print_table(cases, double):
    print("# case                   no payment (s)  503s  lost  double  "
          "404 reads  reads  no answer", flush=True)
    for c in cases:
        gap = f"{c.gap:.1f}" if c.gap is not None else "-"
        lost = len(c.lost) + len(c.refunds_lost)
        print(f"# {c.short:<24} {gap:>12} {c.refusals:>5} {lost:>5} "
              f"{'-':>7} {c.reads['404']:>10} {sum(c.reads.values()):>6} "
              f"{c.unanswered + c.reads['no answer']:>10}", flush=True)
    print(f"# {'all':<24} {'':>12} {sum(c.refusals for c in cases):>5} "
          f"{sum(len(c.lost) + len(c.refunds_lost) for c in cases):>5} "
          f"{double:>7} "
          f"{sum(c.reads['404'] for c in cases):>10} "
          f"{sum(sum(c.reads.values()) for c in cases):>6} "
          f"{sum(c.unanswered + c.reads['no answer'] for c in cases):>10}",
          flush=True)


def check_outcome(st, load, before, lost):
    """The run as a whole: (payments, double charges, what is wrong)."""
    wrong = []
    finals = dict(load.finals)
    locs = {r.header("Location") for _, r in finals.values()}
    if len(locs) != len(finals):
        wrong.append(f"{len(locs)} payments for {len(finals)} keys")
    # Every key again, the lost ones aside (their replay was a new
    # payment): a payment lost after its case was checked shows here.
    problems = verify_keys(st, [(k, v) for k, v in finals.items()
                                if k not in lost])
    if problems:
        wrong.append(f"{len(problems)} acknowledged payments lost after "
                     "their case: " + "; ".join(
                         p for ps in list(problems.values())[:5]
                         for p in ps[:1]))
    if lost:
        wrong.append(f"{len(lost)} acknowledged payments lost in the cases "
                     "above (each replayed afresh when found)")
    after = st.stats()
    got = {k: after.get(k, 0) - before.get(k, 0) for k in ("charges", "payments")}
    double = max(0, got["charges"] - len(finals))
    if got != {"charges": len(finals), "payments": len(finals)}:
        wrong.append(f"{len(finals)} keys, but charges {got['charges']} and "
                     f"payments {got['payments']}")
    if after.get("in_progress", 0) != 0:
        wrong.append(f"{after.get('in_progress')} keys still in progress")
    return len(finals), double, wrong


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory")
    ap.add_argument("--suite", default="failover")
    ap.add_argument("--kills", type=int, default=3, help="primaries killed")
    ap.add_argument("--cases", default=",".join(CASES),
                    help="the cases run, in order: " + ", ".join(CASES))
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--lease", type=int, default=5, help="IDEM_LEASE, seconds")
    ap.add_argument("--max-keys", type=int, default=20000)
    ap.add_argument("--pace", type=float, default=0.05,
                    help="seconds a client waits between keys")
    ap.add_argument("--deadline", type=float, default=690)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    DEADLINE.reset(args.deadline)
    names = [n for n in args.cases.split(",") if n]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        ap.error(f"unknown cases {unknown}: {', '.join(CASES)}")
    if not patroni.available():
        RESULTS.fail("failover", "patroni, etcd or PostgreSQL not installed")
        return RESULTS.summary(args.suite)
    become_subreaper()
    atexit.register(cleanup_all)
    atexit.register(faults.resume_all)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    started = time.monotonic()
    try:
        st = Stack(os.path.abspath(args.build), args)
    except Exception as e:              # noqa: BLE001
        RESULTS.fail("failover start", f"{type(e).__name__}: {e}")
        return RESULTS.summary(args.suite)
    atexit.register(st.cleanup)
    load = readers = None
    plan = []
    for n in names:
        if n == "kill":
            plan += [(f"primary killed ({i})", f"kill {i}", kill_primary)
                     for i in range(1, args.kills + 1)]
        else:
            plan.append((n,) + {
                "standby": ("the synchronous standby killed", kill_standby),
                "pause-pg": ("the leader's PostgreSQL paused",
                             lambda s, l, c: pause_primary(s, l, c, False)),
                "pause-node": ("the leader's node paused",
                               lambda s, l, c: pause_primary(s, l, c, True)),
                "stall-new-leader": ("the new leader's Patroni stalled, the "
                                     "old primary continued",
                                     stall_new_leader),
                "partition": ("a host cut off from the primary mid-claim",
                              partition),
                "walreceiver": ("the synchronous standby's WAL receiver "
                                "stopped", stall_walreceiver),
            }[n])
            plan[-1] = (plan[-1][1], n, plan[-1][2])
    cases = []
    try:
        note(f"store {st.uri}; hosts " + ", ".join(
            f"{h.name} on {h.port}" for h in st.hosts)
            + f" ({st.hosts[1].name} through a proxy a node)"
            + f"; up in {time.monotonic() - started:.1f} s")
        before = st.stats()
        load = Load(st, args.clients, args.max_keys, args.lease, args.pace)
        lost = {}
        readers = Readers(st, load, lost)
        load.start()
        readers.start()
        since = time.monotonic()
        for name, short, fn in plan:
            c = Case(name, short)
            cases.append(c)
            t = time.monotonic()
            try:
                fn(st, load, c)
            except (Check, RuntimeError, TimeoutError) as e:
                c.why = str(e)
            finally:
                faults.resume_all()
            c.t1 = time.monotonic()
            note(f"{name}: {c.t1 - t:.1f} s")
            since = close_case(st, load, readers, c, since, lost)
            report_case(c)
        readers.finish()
        expect(load.finish(), "clients still running at the deadline")
        last = Case("after the cases", "after")
        close_case(st, load, readers, last, since, lost)
        if last.lost or last.reads["404"] or last.bad:
            cases.append(last)
            report_case(last)
        n, double, wrong = check_outcome(st, load, before, lost)
        if wrong:
            RESULTS.fail("failover", "\n".join(wrong))
        else:
            RESULTS.ok(f"{n} acknowledged payments all there, charges = "
                       "payments = keys, only 503 or 409 with Retry-After "
                       "before a 201")
        print_table(cases, double)
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
        kills = [c for c in cases if c.name.startswith("primary killed")]
        others = [c for c in cases if not c.name.startswith("primary killed")
                  and c.gap is not None]

        def g(c):
            return f"{c.gap:.1f}" if c.gap is not None else "-"
        print(f"{args.suite}: summary {len(kills)} primary kills, seconds "
              f"without a payment " + " ".join(g(c) for c in kills)
              + " (" + ", ".join(f"{c.short} {g(c)}" for c in others)
              + f"), {load.transient[503]} x 503, {load.transient[409]} x 409, "
              f"{n} payments, {sum(len(c.lost) for c in cases)} lost, "
              f"{sum(c.reads['404'] for c in cases)} reads 404", flush=True)
    except Check as e:
        RESULTS.fail("failover", str(e))
    except Exception as e:              # noqa: BLE001
        RESULTS.fail("failover", f"{type(e).__name__}: {e}\n{st.log_tail()}")
    finally:
        if load is not None:
            load.stop.set()
        if readers is not None:
            readers.stop.set()
        st.cleanup()
    note(f"total: {time.monotonic() - started:.1f} s")
    return RESULTS.summary(args.suite)


if __name__ == "__main__":
    sys.exit(main())
