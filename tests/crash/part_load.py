# SPDX-License-Identifier: MIT
"""Kills under load: clients paying while a thread kills workers."""

import concurrent.futures
import json
import os
import random
import re
import secrets
import signal
import threading
import time

from lib import servers
from lib.common import DEADLINE, note, proc_alive, proc_state, wait_gone
from crashlib import (RESULTS, Answer, cleanup_instance, http_exchange, pay,
                      print_table, replay_problems, retry_after, start_instance,
                      whose_answer, worker_log_line, worker_log_problems)


# ---------------------------------------------------------------- kill under load

class LoadStats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.requests = 0
        self.failed = []        # the 5xx outcomes, to find whose they were

    def add(self, label, request=True):
        with self.lock:
            self.requests += request
            self.counts[label] = self.counts.get(label, 0) + 1

    def add_5xx(self, o):
        with self.lock:
            self.failed.append(o)


def classify(o):
    if o.answer is None:
        return "conn-error" if o.error != "truncated" else "truncated"
    s = o.answer.status
    if s == 201:
        return "201-replay" if o.answer.replayed else "201"
    if s == 409:
        return "409"
    if s >= 500:
        return "5xx"
    return str(s)


def worker_outcomes(inst):
    """Counts of the responder's per-request log lines (outcome=...) for
    POST /payments: what the workers decided (claim, takeover, conflict...)."""
    counts = {}
    for path in inst.logs:
        try:
            with open(path, errors="replace") as f:
                for m in re.finditer(r"POST /payments (\d+) account=\S+ key=\S+ outcome=(\S+)", f.read()):
                    counts[m.group(2)] = counts.get(m.group(2), 0) + 1
        except OSError:
            continue
    return counts


def settle(inst, killed, workers):
    """Waits for the killed workers to be gone and (lighttpd) the pool to
    be whole again; what is still wrong after 30 s, or None.  A SIGKILLed
    worker's listening socket stays open until every thread has left and
    its memory is torn down, and all that while the web server, which
    learns of the death only when the process is gone, hands it new
    connections: the kernel accepts them on the dead worker's behalf, and
    the web server answers each with its own 500 when the teardown closes
    them.  Requests sent after the kills must not be sent into a kill."""
    end = time.monotonic() + DEADLINE.timeout(30)
    if not wait_gone(killed, max(0.1, end - time.monotonic())):
        return "killed workers still there: " + ", ".join(
            proc_state(p) for p in killed if proc_alive(p))
    if not isinstance(inst, servers.LighttpdSpawn):
        return None
    while time.monotonic() < end and len(inst.worker_pids()) < workers:
        time.sleep(0.05)
    n = len(inst.worker_pids())
    return None if n >= workers else f"{n} of {workers} workers respawned"


def part_load(args, server):
    name = f"load {server}"
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    rng = random.Random(seed)
    lease = 2
    nclients, nkills = args.clients, args.kills
    note(f"kill under load: seed {seed} (rerun with --seed {seed}), {nclients} clients, "
         f"{args.load_workers} workers, {nkills} kills every 100-300 ms, "
         f"IDEM_LEASE={lease}, IDEM_PROVIDER_LATENCY_MS={args.latency_ms}")
    started = time.monotonic()
    inst = start_instance(server, args.load_workers, lease, args.latency_ms, None, args.keep)
    try:
        sec = inst.secrets["acct_alpha"]
        stats = LoadStats()
        results = {}            # key -> first 201 Answer, or an error string
        results_lock = threading.Lock()
        killing = threading.Event()
        killing.set()
        stop = threading.Event()
        kills = []
        per_key_budget = 30.0

        def one_key(cid, n, crng):
            key = f"load-{cid}-{n}-{secrets.token_hex(4)}"
            end = min(time.monotonic() + per_key_budget, DEADLINE.end - 15)
            failures = 0
            last = "no attempt"
            o = None
            while time.monotonic() < end:
                o = pay(inst.port, sec, key, timeout=10)
                c = classify(o)
                stats.add(c)
                if c == "5xx":
                    stats.add(f"status {o.answer.status}", request=False)
                    stats.add_5xx(o)
                last = o.label()
                if c in ("201", "201-replay"):
                    with results_lock:
                        results[key] = o.answer
                    return
                if c == "409":
                    time.sleep(retry_after(o.answer, lease + 1))
                    continue
                if c in ("5xx", "conn-error", "truncated"):
                    failures += 1
                    time.sleep(min(0.05 * (2 ** min(failures, 4)), 0.5) * crng.uniform(0.5, 1))
                    continue
                with results_lock:
                    results[key] = f"unexpected answer {o.label()} " + \
                        (o.answer.brief() if o.answer else "")
                return
            if o is not None and o.answer is not None and o.answer.status >= 500:
                last += f": {whose_answer(inst, o)}"
            with results_lock:
                results[key] = f"no 201 within {per_key_budget:.0f} s (last {last})"

        def client(cid):
            crng = random.Random(f"{seed}-{cid}")
            n = 0
            # keep the workers busy for as long as the killer runs
            while not stop.is_set() and (n == 0 or killing.is_set()):
                one_key(cid, n, crng)
                n += 1

        def kill_one(teardown=0.0):
            # Not one that is already on its way out: a second SIGKILL
            # would count as a kill and do nothing.
            pids = [p for p in inst.worker_pids() if p not in kills]
            if not pids:
                return
            pid = rng.choice(pids)
            try:
                if teardown > 0:
                    # A teardown that takes this long: the worker stops
                    # answering at once, its socket takes connections
                    # until the SIGKILL ends it.
                    os.kill(pid, signal.SIGSTOP)
                    t = threading.Timer(teardown, os.kill, (pid, signal.SIGKILL))
                    t.daemon = True
                    t.start()
                else:
                    os.kill(pid, signal.SIGKILL)
                kills.append(pid)
            except ProcessLookupError:
                pass

        def killer():
            try:
                while len(kills) < nkills - 1 and not stop.is_set():
                    time.sleep(rng.uniform(0.1, 0.3))
                    kill_one()
            finally:
                killing.clear()

        threads = [threading.Thread(target=client, args=(i,), daemon=True)
                   for i in range(nclients)]
        kt = threading.Thread(target=killer, daemon=True)
        for t in threads:
            t.start()
        kt.start()
        load_end = DEADLINE.end - 12
        kt.join(max(0.1, load_end - time.monotonic()))
        for t in threads:
            t.join(max(0.1, load_end - time.monotonic()))
        stop.set()
        hung = sum(t.is_alive() for t in threads)
        # The last kill comes as the load ends, on a worker that now has
        # no request, and its teardown takes a while (as a threaded
        # worker's does on a busy machine): the checks below must not
        # start until it is over (settle).
        kill_one(teardown=0.3)
        load_s = time.monotonic() - started
        unsettled = settle(inst, kills, args.load_workers)

        # afterwards: every key's replay equals its 201
        keys = list(results)
        good = {k: v for k, v in results.items() if isinstance(v, Answer)}
        bad = {k: v for k, v in results.items() if not isinstance(v, Answer)}

        def replay(k):
            return k, pay(inst.port, sec, k, timeout=10)
        replays = {}
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            for k, o in pool.map(replay, list(good)):
                replays[k] = o
        differ = []
        for k, o in replays.items():
            if o.answer is None:
                differ.append(f"{k}: replay {o.label()}")
                continue
            p = replay_problems(good[k], o.answer, k)
            if p and o.answer.status >= 500:
                p[0] += f" ({whose_answer(inst, o)})"
            if p:
                differ.append(p[0])

        def get_row(k):
            loc = good[k].header("Location") or ""
            return k, http_exchange(inst.port, "GET", loc, None,
                                    {"Authorization": f"Bearer {sec}"}, 10)
        missing_rows = []
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            for k, o in pool.map(get_row, list(good)):
                body = good[k].body
                try:
                    doc = json.loads(body)
                except ValueError:
                    doc = {}
                if o.answer is None or o.answer.status != 200 or \
                        str(doc.get("id")) not in o.answer.body.decode("utf-8", "replace"):
                    missing_rows.append(f"{k}: GET {good[k].header('Location')}: {o.label()}")
        ids = {json.loads(a.body).get("id") for a in good.values()}
        charge_ids = {json.loads(a.body).get("charge_id") for a in good.values()}
        st = inst.stats()
        workers_now = len(inst.worker_pids())
        outcomes = worker_outcomes(inst)
        # A 5xx under load is the web server's when a worker died with the
        # request (no worker logged it), else a worker's own answer.
        by_worker = [(o, line) for o, line in
                     ((o, worker_log_line(inst, o.rid)) for o in stats.failed)
                     if line is not None and f" {o.answer.status} account=" in line]
        c = stats.counts
        figures = [
            ["keys (payments attempted)", len(keys)],
            ["requests sent", stats.requests],
            ["kills (SIGKILL to a worker; the last as the load ended)", len(kills)],
            ["201 fresh", c.get("201", 0)],
            ["201 replay (the first 201 a client saw was a replay)", c.get("201-replay", 0)],
            ["409 (honoured Retry-After)", c.get("409", 0)],
            ["5xx", f"{c.get('5xx', 0)} (" + ", ".join(
                f"{k[7:]}: {v}" for k, v in sorted(c.items()) if k.startswith("status "))
             + ")"],
            ["5xx a worker answered (the rest: the web server's)",
             len(by_worker)],
            ["connection errors", c.get("conn-error", 0)],
            ["truncated answers", c.get("truncated", 0)],
            ["other answers", sum(v for k, v in c.items() if k not in
                                  ("201", "201-replay", "409", "5xx", "conn-error",
                                   "truncated") and not k.startswith("status "))],
            ["worker decisions logged (killed requests log nothing)",
             ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())) or "none"],
            ["keys without a 201", len(bad)],
            ["client threads still running", hung],
            ["ledger charges", st["charges"]],
            ["payments stored", st["payments"]],
            ["distinct payment ids / charge ids in the 201s", f"{len(ids)} / {len(charge_ids)}"],
            ["keys / completed / in_progress / stuck",
             f"{st['keys']} / {st['completed']} / {st['in_progress']} / {st['stuck']}"],
            ["replays differing from their 201", len(differ)],
            ["payments not readable by GET Location", len(missing_rows)],
            ["workers alive at the end", f"{workers_now} of {args.load_workers}"],
            ["seconds (load phase)", f"{load_s:.1f}"],
        ]
        print_table(f"Kill under load ({server}, seed {seed})", ["figure", "value"], figures)
        for o, line in by_worker[:10]:
            note(f"a worker's {o.answer.status}: {line}")

        n = len(keys)
        RESULTS.record(f"{name}: every key got a 201 in the end ({n} keys)",
                       [f"{len(bad)} keys without a 201: " +
                        "; ".join(f"{k}: {v}" for k, v in list(bad.items())[:5])] if bad
                       else ([f"{hung} client threads still running at the deadline"]
                             if hung else []))
        RESULTS.record(f"{name}: kills landed ({len(kills)} kills, "
                       f"{c.get('5xx', 0) + c.get('conn-error', 0) + c.get('truncated', 0)} "
                       f"failed exchanges, {outcomes.get('takeover', 0)} take-overs)",
                       ([] if len(kills) == nkills else
                        [f"only {len(kills)} of {nkills} kills sent"]) +
                       ([f"after the kills: {unsettled}"] if unsettled else []) +
                       ([] if outcomes.get("takeover", 0) >= 1 else
                        ["no take-over logged: no kill landed inside a claimed request, "
                         "so the run proved little (more --kills or --latency-ms?)"]))
        RESULTS.record(f"{name}: one charge and one payment per key "
                       f"(charges {st['charges']}, payments {st['payments']}, keys {n})",
                       [p for p in (
                           st["charges"] != n and f"charges {st['charges']} != keys {n}",
                           st["payments"] != n and f"payments {st['payments']} != keys {n}",
                           len(ids) != len(good) and
                           f"{len(ids)} distinct payment ids for {len(good)} keys",
                           len(charge_ids) != len(good) and
                           f"{len(charge_ids)} distinct charge ids for {len(good)} keys",
                           missing_rows and f"{len(missing_rows)} payments not found: "
                           + "; ".join(missing_rows[:3]))
                        if p])
        RESULTS.record(f"{name}: no key stuck or in progress",
                       [] if st["stuck"] == 0 and st["in_progress"] == 0
                       and st["keys"] == n and st["completed"] == n else
                       [f"stats {st} for {n} keys"])
        RESULTS.record(f"{name}: every replay equals its 201", differ[:5])
        wl = worker_log_problems(inst)
        if inst.server is not None and inst.server.poll() is not None:
            wl.append(f"server exited {inst.server.returncode}")
        if workers_now < args.load_workers and isinstance(inst, servers.LighttpdSpawn):
            # a respawn may still be pending: give it a moment
            end = time.monotonic() + min(5, DEADLINE.timeout(5))
            while time.monotonic() < end and len(inst.worker_pids()) < args.load_workers:
                time.sleep(0.1)
            workers_now = len(inst.worker_pids())
            if workers_now < args.load_workers:
                wl.append(f"{workers_now} of {args.load_workers} workers alive afterwards")
        RESULTS.record(f"{name}: server and workers healthy, no sanitizer report", wl)
    finally:
        cleanup_instance(inst)
    note(f"kill under load: {time.monotonic() - started:.1f} s")
