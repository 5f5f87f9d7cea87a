# SPDX-License-Identifier: MIT
"""The crash matrix through a live server that respawns its workers."""

import os
import secrets
import time

from lib import servers
from lib.common import DEADLINE
from crashlib import (POINTS, RESULTS, Answer, cleanup_instance, pay, pay_through,
                      print_table, replay_problems, retry_after, start_instance,
                      vnote, worker_log_problems)
from part_cgi import MATRIX_HEADER, CgiRow


# ---------------------------------------------------------------- live matrix

def live_point(server, point, state, workers, keep):
    """One server whose workers die once at point; the client retries."""
    lease = 2
    name = f"live {server}: {point}"
    row = CgiRow(point)
    inst = start_instance(server, workers, lease, 0,
                          f"{point}:killonce={{markers}}/{point}", keep, disarmed=[point])
    try:
        sec = inst.secrets["acct_alpha"]
        key = f"crash-live-{point}-{secrets.token_hex(4)}"
        marker = os.path.join(inst.root, "markers", point)
        before = set(inst.worker_pids())
        # 1. the attempt that dies: arm the fault, nothing else is in flight
        os.unlink(marker)
        o1 = pay(inst.port, sec, key)
        row.first = o1.label()
        if not os.path.exists(marker):
            row.problems.append(f"the fault point did not fire (no {marker}); "
                                f"first answer {o1.label()}")
        if o1.answer is not None and o1.answer.status < 500:
            row.problems.append(f"first attempt: the worker should have died, the "
                                f"client got {o1.answer.brief()}")
        if o1.error == "timeout":
            row.problems.append("first attempt: timed out (server hung on the dead worker)")
        partial = o1 if o1.error == "truncated" else None
        # 2. at once.  The server may not have noticed the dead worker yet
        # and hand the retry to its socket (lighttpd answers 500): a client
        # retries that too, briefly, well inside the 2 s lease.
        o2, transient = pay_through(inst.port, sec, key, 1.0)
        row.in_lease = o2.label() + (f" (after {', '.join(transient)})" if transient else "")
        ref = None
        later = []
        a2 = o2.answer
        if state == "in_progress":
            ra = a2.header("Retry-After") if a2 else None
            if a2 is None or a2.status != 409 or not (ra or "").isdigit() or \
                    not 1 <= int(ra) <= lease:
                row.problems.append(f"retry at once: expected 409 with Retry-After "
                                    f"1..{lease}, got {o2.label()}"
                                    + (f" {a2.brief()}" if a2 else ""))
        elif state == "completed":
            if a2 is None or a2.status != 201 or not a2.replayed:
                row.problems.append(f"retry at once: expected the replay, got {o2.label()}")
            else:
                ref = a2
        else:
            if a2 is None or a2.status != 201 or a2.replayed:
                row.problems.append(f"retry at once: expected a fresh 201, got {o2.label()}")
            else:
                ref = a2
        # 3. like a client: retry while 409, honouring Retry-After, bounded
        end = time.monotonic() + min(lease * 4 + 5, DEADLINE.timeout(30))
        seen = []
        o3 = o2
        while True:
            if o3.answer is not None and o3.answer.status != 409 and o3 is not o2:
                break
            if o3.answer is not None and o3.answer.status == 409:
                time.sleep(retry_after(o3.answer, lease + 1))
            elif o3 is not o2:
                time.sleep(0.2)
            if time.monotonic() > end:
                break
            o3 = pay(inst.port, sec, key)
            seen.append(o3.label())
        a3 = o3.answer
        row.after_lease = o3.label() + (" (take-over)" if state == "in_progress" and a3
                                        and a3.status == 201 and not a3.replayed else "")
        if len(seen) > 1:
            vnote(f"{name}: retries {seen}")
        if a3 is None or a3.status != 201:
            row.problems.append(f"retrying until not 409: got {o3.label()} (all: {seen})")
        elif state == "in_progress":
            if a3.replayed:
                row.problems.append("after the lease: a replay, expected the take-over's 201")
            ref = a3
        elif ref is None:
            ref = a3
        else:
            later.append(("retry after the lease", a3))
        # 4. later replays
        for i in range(2):
            o = pay(inst.port, sec, key)
            if o.answer is None:
                later.append((f"replay {i + 1}", Answer(0, [], b"")))
                row.problems.append(f"replay {i + 1}: {o.label()}")
            else:
                later.append((f"replay {i + 1}", o.answer))
        ident = []
        if ref is None:
            ident.append("no 201 to compare the replays with")
        else:
            for what, a in later:
                ident += replay_problems(ref, a, what)
            if partial is not None and (partial.status != 201
                                        or not ref.body.startswith(partial.partial)):
                ident.append(f"the truncated first answer ({partial.status}, "
                             f"{partial.partial[:80]!r}) is not the start of the 201")
        row.identical = "no" if ident else "yes"
        row.problems += ident
        st = inst.stats()
        row.charges, row.payments = st["charges"], st["payments"]
        want = {"keys": 1, "completed": 1, "in_progress": 0, "stuck": 0,
                "charges": 1, "payments": 1}
        bad = {k: (st.get(k), v) for k, v in want.items() if st.get(k) != v}
        if bad:
            row.problems.append("idemctl stats " + ", ".join(
                f"{k}: {g} (expected {v})" for k, (g, v) in bad.items()))
        # the process manager replaced the dead worker: lighttpd keeps
        # min-procs alive; mod_fcgid spawns on demand (the retries above were
        # served), so only lighttpd is held to the count
        eager = isinstance(inst, servers.LighttpdSpawn)
        end = time.monotonic() + (min(10, DEADLINE.timeout(10)) if eager else 0)
        while time.monotonic() < end:
            now = set(inst.worker_pids())
            if len(now) >= workers and now != before:
                break
            time.sleep(0.1)
        now = set(inst.worker_pids())
        dead = before - now
        vnote(f"{name}: workers {sorted(before)} -> {sorted(now)}")
        if not dead:
            row.problems.append(f"no worker died (workers {sorted(before)} -> {sorted(now)})")
        if len(now) < workers and eager:
            row.problems.append(f"{len(now)} of {workers} workers alive 10 s after the kill "
                                f"(not respawned)")
        if inst.server is not None and inst.server.poll() is not None:
            row.problems.append(f"server exited {inst.server.returncode}")
        row.problems += worker_log_problems(inst)
        if row.problems:
            row.problems.append("log tail:\n" + inst.log_tail())
        return row
    finally:
        cleanup_instance(inst)


def pick_server(args):
    """The first of the candidate servers that starts (cheap probe)."""
    candidates = [args.server] if args.server else ["lighttpd-spawn", "apache"]
    why = []
    for s in candidates:
        try:
            inst = start_instance(s, args.workers, 2, 0, None, False)
        except Exception as e:      # noqa: BLE001
            why.append(f"{s}: {type(e).__name__}: {str(e)[:300]}")
            continue
        cleanup_instance(inst)
        return s, why
    return None, why


def part_live(args, server):
    rows = []
    started = time.monotonic()
    for p, s, _, _ in POINTS:
        name = f"live {server}: {p}"
        if DEADLINE.left() < 20:
            RESULTS.fail(name, "global deadline too close")
            continue
        try:
            row = live_point(server, p, s, args.workers, args.keep)
        except Exception as e:      # noqa: BLE001
            RESULTS.fail(name, f"{type(e).__name__}: {e}")
            continue
        rows.append(row)
        RESULTS.record(name, row.problems)
    print_table(f"Live crash matrix ({server}, {args.workers} workers, IDEM_LEASE=2, "
                f"IDEM_FAULT=POINT:killonce; {time.monotonic() - started:.1f} s)",
                MATRIX_HEADER, [r.cells() for r in rows])
