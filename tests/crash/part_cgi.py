# SPDX-License-Identifier: MIT
"""The crash matrix through plain CGI children with a pinned clock."""

import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from lib.common import DEADLINE, has_sanitizer_report, note
from crashlib import (ACCOUNT, BODY, OTHER_BODY, POINTS, RESULTS, SECRET, Answer,
                      print_table, replay_problems)


# ---------------------------------------------------------------- CGI

# With --store pg: the throwaway PostgreSQL server (lib.pg.Postgres) whose
# fresh databases, one per CgiState, hold the idempotency store.
PG = None


class CgiState:
    """A fresh store, ledger and keys file in a temp directory."""

    def __init__(self, build, lease_s=30):
        self.build = build
        self.lease_s = lease_s
        self.tmp = tempfile.mkdtemp(prefix="idem-crash-cgi-")
        self.db = os.path.join(self.tmp, "db")
        self.provider = os.path.join(self.tmp, "provider")
        self.keys = os.path.join(self.tmp, "keys")
        os.makedirs(self.db)
        os.makedirs(self.provider)
        with open(self.keys, "w") as f:
            f.write(f"{ACCOUNT} {hashlib.sha256(SECRET.encode()).hexdigest()}\n")
        self.pgdb = self.store = None
        if PG is not None:
            self.pgdb = "idem_" + os.path.basename(self.tmp).replace("-", "_")
            self.store = PG.createdb(self.pgdb)
            p = subprocess.run([os.path.join(build, "idemctl"), "-s", self.store,
                                "migrate"], capture_output=True,
                               timeout=DEADLINE.timeout(30))
            if p.returncode != 0:
                raise RuntimeError(f"idemctl migrate: {p.stderr.decode()[-400:]}")

    def cleanup(self, keep=False):
        if keep:
            note(f"kept {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)
            if self.pgdb is not None:
                PG.dropdb(self.pgdb)

    def base_env(self):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C"}
        for passthru in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
                         "LD_LIBRARY_PATH"):
            if passthru in os.environ:
                env[passthru] = os.environ[passthru]
        env.update({"IDEM_DB_DIR": self.db, "IDEM_PROVIDER": "simulated",
                    "IDEM_PROVIDER_DIR": self.provider,
                    "IDEM_KEYS_FILE": self.keys, "IDEM_LEASE": str(self.lease_s),
                    "IDEM_PROVIDER_LATENCY_MS": "0"})
        if self.store is not None:
            env["IDEM_STORE"] = self.store
        return env

    def post(self, key, now_ms, body=BODY, fault=None, path="/payments"):
        """One POST (to /payments unless path says) as plain CGI.  Returns a CgiRun."""
        env = self.base_env()
        env.update({
            "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.1",
            "SERVER_SOFTWARE": "idem-crash/1", "SERVER_NAME": "localhost",
            "SERVER_PORT": "8080", "REMOTE_ADDR": "127.0.0.1",
            "REMOTE_PORT": "40000", "REQUEST_METHOD": "POST",
            "REQUEST_URI": path, "SCRIPT_NAME": "", "PATH_INFO": path,
            "QUERY_STRING": "", "HTTP_HOST": "localhost:8080",
            "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
            "HTTP_AUTHORIZATION": f"Bearer {SECRET}",
            "HTTP_IDEMPOTENCY_KEY": f'"{key}"',
            "IDEM_TEST_NOW_MS": str(now_ms),
        })
        if fault:
            env["IDEM_FAULT"] = fault
        p = subprocess.run([os.path.join(self.build, "idem-fcgi")], input=body,
                           capture_output=True, env=env, cwd=self.tmp,
                           timeout=DEADLINE.timeout(30))
        return CgiRun(p.returncode, p.stdout, p.stderr)

    def ctl(self, cmd, now_ms):
        env = self.base_env()
        env["IDEM_TEST_NOW_MS"] = str(now_ms)
        p = subprocess.run([os.path.join(self.build, "idemctl"), cmd],
                           capture_output=True, env=env, cwd=self.tmp,
                           timeout=DEADLINE.timeout(30))
        out = p.stdout.decode(errors="replace")
        err = p.stderr.decode(errors="replace")
        if p.returncode != 0 or has_sanitizer_report(err):
            raise RuntimeError(f"idemctl {cmd} exited {p.returncode}: {err[-400:]}")
        return out

    def stats(self, now_ms):
        out = self.ctl("stats", now_ms)
        vals = {m.group(1): int(m.group(2))
                for m in re.finditer(r"^\s*(\w+)\s*:\s*(\d+)\s*$", out, re.M)}
        for k in ("keys", "completed", "in_progress", "stuck", "payments", "charges"):
            if k not in vals:
                raise RuntimeError(f"idemctl stats: no '{k}: N' in {out!r}")
        return vals


class CgiRun:
    def __init__(self, rc, out, err):
        self.rc = rc
        self.out = out
        self.err = err.decode("utf-8", "replace")
        self.answer = None
        self.parse_error = None
        if out:
            try:
                self.answer = parse_cgi(out)
            except ValueError as e:
                self.parse_error = str(e)

    @property
    def killed(self):
        return self.rc == -signal.SIGKILL

    def brief(self):
        if self.killed:
            return "killed (SIGKILL)" + (f", {len(self.out)} bytes out" if self.out else "")
        if self.rc < 0:
            return f"died of signal {-self.rc}"
        if self.answer is None:
            return f"exit {self.rc}, unparsable output {self.out[:120]!r}"
        return f"exit {self.rc}, {self.answer.brief()}"

    def stderr_tail(self):
        lines = self.err.strip().splitlines()[-6:]
        return "\n".join("stderr: " + ln for ln in lines)


def parse_cgi(out, partial=False):
    """RFC 3875 section 6: header lines, a blank line, the body."""
    for sep in (b"\r\n\r\n", b"\n\n"):
        i = out.find(sep)
        if i != -1:
            head, body = out[:i], out[i + len(sep):]
            break
    else:
        raise ValueError(f"no end of headers in {out[:120]!r}")
    headers, status = [], 200
    for line in head.decode("latin-1").splitlines():
        if ":" not in line:
            raise ValueError(f"bad header line {line!r}")
        k, v = line.split(":", 1)
        k, v = k.strip(), v.strip()
        if k.lower() == "status":
            status = int(v.split()[0])
        else:
            headers.append((k, v))
    return Answer(status, headers, body)


class CgiRow:
    """One line of the CGI matrix, filled in as the scenario runs."""

    def __init__(self, label):
        self.label = label
        self.first = "-"
        self.in_lease = "-"
        self.after_lease = "-"
        self.charges = "-"
        self.payments = "-"
        self.identical = "-"
        self.problems = []

    def cells(self):
        return [self.label, self.first, self.in_lease, self.after_lease,
                self.charges, self.payments, self.identical]


MATRIX_HEADER = ["point", "first attempt", "retry in lease", "retry after lease",
                 "charges", "payments", "replay identical"]


def cgi_check_run(row, run, what, expect_killed=False):
    """Common checks of every invocation: signal, sanitizer, well-formed."""
    mark = has_sanitizer_report(run.err)
    if mark:
        row.problems.append(f"{what}: sanitizer report ({mark})\n{run.stderr_tail()}")
    if expect_killed:
        if not run.killed:
            row.problems.append(f"{what}: expected death by SIGKILL, got {run.brief()}"
                                f"\n{run.stderr_tail()}")
        return None
    if run.rc != 0 or run.answer is None:
        row.problems.append(f"{what}: {run.brief()}\n{run.stderr_tail()}")
        return None
    return run.answer


def iso_ms(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def cgi_expect_created(row, ans, ms, why):
    """The payment's created_at shows which attempt fixed it: a take-over
    resumes from the recovery point (the id and time the claim recorded)."""
    try:
        got = json.loads(ans.body).get("created_at")
    except ValueError:
        got = None
    if got != iso_ms(ms):
        row.problems.append(f"created_at {got!r}, expected {iso_ms(ms)} ({why})")


def cgi_expect_stats(row, st, now_ms, what, **want):
    got = st.stats(now_ms)
    bad = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
    if bad:
        row.problems.append(f"{what}: idemctl stats " + ", ".join(
            f"{k}: {g} (expected {v})" for k, (g, v) in bad.items()))
    return got


def cgi_point(build, point, state, charges_at_crash, keep):
    """die at point; retry at T+1 s; retry at T+lease+1 s; replay twice."""
    lease = 30
    st = CgiState(build, lease)
    row = CgiRow(point)
    key = f"crash-{point}-{secrets.token_hex(4)}"
    T = int(time.time()) * 1000 + 789
    try:
        # 1. die at the point
        run = st.post(key, T, fault=f"{point}:kill")
        cgi_check_run(row, run, "first attempt", expect_killed=True)
        if not run.killed:
            row.first = run.brief()
            return row
        after = st.stats(T)
        seen = {"absent": after["keys"] == 0,
                "in_progress": after["keys"] == 1 and after["in_progress"] == 1,
                "completed": after["keys"] == 1 and after["completed"] == 1}
        now_state = next((k for k, v in seen.items() if v), "?")
        row.first = f"SIGKILL, {now_state}, ch={after['charges']} pay={after['payments']}"
        if now_state != state:
            row.problems.append(f"after the crash the key is {now_state}, expected {state} "
                                f"(stats {after})")
        want_pay = 1 if state == "completed" else 0
        if after["charges"] != charges_at_crash or after["payments"] != want_pay:
            row.problems.append(f"after the crash: charges {after['charges']} "
                                f"payments {after['payments']}, expected "
                                f"{charges_at_crash} and {want_pay} (invariant 6)")
        # durable before visible: nothing reached the client before the
        # completion committed; at mid_response, half of the answer did.
        partial = None
        if point == "mid_response":
            try:
                partial = parse_cgi(run.out)
            except ValueError as e:
                row.problems.append(f"mid_response output not a CGI head: {e}")
        elif run.out:
            row.problems.append(f"{len(run.out)} bytes reached the client before "
                                f"the crash at {point}: {run.out[:120]!r}")

        # 2. inside the lease
        ref = None
        later = []
        r2 = cgi_check_run(row, st.post(key, T + 1000), "retry in lease")
        if r2 is not None:
            row.in_lease = r2.label()
            if state == "in_progress":
                ra = r2.header("Retry-After") or ""
                if r2.status != 409 or not ra.isdigit() or not 1 <= int(ra) <= lease:
                    row.problems.append(f"retry in lease: expected 409 with Retry-After "
                                        f"1..{lease}, got {r2.brief()} RA={ra!r}")
            elif state == "completed":
                if r2.status != 201 or not r2.replayed:
                    row.problems.append(f"retry in lease: expected the replay, got "
                                        f"{r2.label()} {r2.brief()}")
                ref = r2
            else:       # absent: a fresh claim
                if r2.status != 201 or r2.replayed:
                    row.problems.append(f"retry in lease: expected a fresh 201 "
                                        f"(nothing was claimed), got {r2.label()}")
                ref = r2 if r2.status == 201 else None
        if state == "in_progress":
            cgi_expect_stats(row, st, T + lease * 1000 + 1000,
                             "at T+lease+1 s, before the take-over", stuck=1,
                             in_progress=1)

        # 3. after the lease
        r3 = cgi_check_run(row, st.post(key, T + lease * 1000 + 1000), "retry after lease")
        if r3 is not None:
            row.after_lease = r3.label() + (" (take-over)" if state == "in_progress"
                                            and r3.status == 201 and not r3.replayed else "")
            if state == "in_progress":
                if r3.status != 201 or r3.replayed:
                    row.problems.append(f"retry after lease: expected the take-over's "
                                        f"201, got {r3.label()} {r3.brief()}")
                ref = r3
            else:
                if ref is None:
                    ref = r3
                else:
                    later.append(("retry after lease", r3))
        if ref is not None and ref.status == 201:
            if point in ("after_claim", "in_provider", "after_charge",
                         "store_complete_commit"):
                # The claim itself records the payment's id and time.
                cgi_expect_created(row, ref, T, "the recovery point the first claim wrote")
            elif state == "completed":
                cgi_expect_created(row, ref, T, "the first attempt completed")
        got = cgi_expect_stats(row, st, T + lease * 1000 + 2000, "after the 201",
                               keys=1, completed=1, in_progress=0, stuck=0,
                               charges=1, payments=1)
        row.charges, row.payments = got["charges"], got["payments"]

        # 4. two more retries, later
        for i, dt in enumerate((lease * 1000 + 9000, 3600 * 1000)):
            r = cgi_check_run(row, st.post(key, T + dt), f"replay {i + 1}")
            if r is not None:
                later.append((f"replay {i + 1} (T+{dt // 1000}s)", r))
        ident = []
        if ref is None or ref.status != 201:
            row.problems.append("no 201 to compare the replays with")
        else:
            for what, r in later:
                ident += replay_problems(ref, r, what)
            if partial is not None:
                if partial.status != ref.status or not ref.body.startswith(partial.body):
                    ident.append(f"the half answer before the crash ({partial.status}, "
                                 f"{partial.body[:80]!r}) is not the start of the 201")
                else:
                    ident += [p for p in replay_problems(ref, Answer(
                        partial.status, partial.headers + [("Idempotent-Replayed", "true")],
                        ref.body), "half answer before the crash") if "headers" in p]
        row.identical = "no" if ident or len(later) < 2 else "yes"
        row.problems += ident
        cgi_expect_stats(row, st, T + 3600 * 1000, "at the end", keys=1, completed=1,
                         in_progress=0, stuck=0, charges=1, payments=1)
        return row
    finally:
        st.cleanup(keep and bool(row.problems))


def cgi_kill_twice(build, keep):
    lease = 30
    st = CgiState(build, lease)
    row = CgiRow("kill twice: after_charge, then store_complete_commit")
    key = f"crash-twice-{secrets.token_hex(4)}"
    T = int(time.time()) * 1000 + 789
    L = lease * 1000
    try:
        run = st.post(key, T, fault="after_charge:kill")
        cgi_check_run(row, run, "first attempt", expect_killed=True)
        run2 = st.post(key, T + L + 1000, fault="store_complete_commit:kill")
        cgi_check_run(row, run2, "first take-over", expect_killed=True)
        row.first = ("SIGKILL x2" if run.killed and run2.killed
                     else f"{run.brief()} / {run2.brief()}")
        got = cgi_expect_stats(row, st, T + L + 1000, "after the second crash",
                               keys=1, in_progress=1, charges=1, payments=0)
        r = cgi_check_run(row, st.post(key, T + L + 2000), "retry in the second lease")
        if r is not None:
            row.in_lease = r.label()
            ra = r.header("Retry-After") or ""
            if r.status != 409 or not ra.isdigit() or not 1 <= int(ra) <= lease:
                row.problems.append(f"retry in the take-over's lease: expected 409 + "
                                    f"Retry-After, got {r.brief()} RA={ra!r}")
        ref = cgi_check_run(row, st.post(key, T + 2 * L + 2000), "second take-over")
        if ref is not None:
            row.after_lease = ref.label() + (" (take-over)" if ref.status == 201
                                             and not ref.replayed else "")
            if ref.status != 201 or ref.replayed:
                row.problems.append(f"second take-over: expected a fresh 201, got "
                                    f"{ref.label()} {ref.brief()}")
        if ref is not None and ref.status == 201:
            cgi_expect_created(row, ref, T, "the first attempt's checkpoint")
        got = cgi_expect_stats(row, st, T + 2 * L + 3000, "after the 201", keys=1,
                               completed=1, in_progress=0, stuck=0, charges=1, payments=1)
        row.charges, row.payments = got["charges"], got["payments"]
        ident = []
        for i, dt in enumerate((2 * L + 9000, 3600 * 1000)):
            r = cgi_check_run(row, st.post(key, T + dt), f"replay {i + 1}")
            if r is not None and ref is not None:
                ident += replay_problems(ref, r, f"replay {i + 1}")
            elif r is None:
                ident.append(f"replay {i + 1}: no answer")
        row.identical = "no" if ident or ref is None else "yes"
        row.problems += ident
        return row
    finally:
        st.cleanup(keep and bool(row.problems))


def cgi_other_body(build, keep):
    lease = 30
    st = CgiState(build, lease)
    row = CgiRow("crash at after_claim, then another body")
    key = f"crash-other-{secrets.token_hex(4)}"
    T = int(time.time()) * 1000 + 789
    L = lease * 1000
    try:
        run = st.post(key, T, fault="after_claim:kill")
        cgi_check_run(row, run, "first attempt", expect_killed=True)
        row.first = "SIGKILL, in_progress" if run.killed else run.brief()
        r = cgi_check_run(row, st.post(key, T + 1000, body=OTHER_BODY),
                          "other body in lease")
        if r is not None:
            row.in_lease = r.label() + " (other body)"
            if r.status != 422:
                row.problems.append(f"other body in the lease: expected 422, got {r.brief()}")
        cgi_expect_stats(row, st, T + 1000, "after the other body", keys=1,
                         in_progress=1, completed=0, charges=0, payments=0)
        # after the lease, another body must still not take the claim over
        r = cgi_check_run(row, st.post(key, T + L + 1000, body=OTHER_BODY),
                          "other body after lease")
        if r is not None and r.status != 422:
            row.problems.append(f"other body after the lease: expected 422 (no take-over "
                                f"with another body), got {r.brief()}")
        after_other = r.label() + " (other body)" if r is not None else "?"
        ref = cgi_check_run(row, st.post(key, T + L + 2000), "same body after lease")
        if ref is not None:
            row.after_lease = f"{after_other}; {ref.label()}"
            if ref.status != 201 or ref.replayed:
                row.problems.append(f"same body after the lease: expected the take-over's "
                                    f"201, got {ref.label()} {ref.brief()}")
        got = cgi_expect_stats(row, st, T + L + 3000, "after the 201", keys=1,
                               completed=1, in_progress=0, stuck=0, charges=1, payments=1)
        row.charges, row.payments = got["charges"], got["payments"]
        ident = []
        r = cgi_check_run(row, st.post(key, T + L + 9000), "replay")
        if r is not None and ref is not None:
            ident += replay_problems(ref, r, "replay")
        r = cgi_check_run(row, st.post(key, T + L + 9500, body=OTHER_BODY),
                          "other body after completion")
        if r is not None and r.status != 422:
            ident.append(f"other body after completion: expected 422, got {r.brief()}")
        row.identical = "no" if ident or ref is None else "yes"
        row.problems += ident
        return row
    finally:
        st.cleanup(keep and bool(row.problems))


def cgi_chain(build, keep):
    """One key dies at every point before completion in turn, each retry a
    take-over of the last (store_claim_commit: the take-over's own claim
    never commits); the last take-over completes with one charge."""
    lease = 30
    st = CgiState(build, lease)
    chain = ["after_claim", "store_claim_commit", "in_provider", "after_charge",
             "store_complete_commit"]
    row = CgiRow("chain: die at " + ", ".join(c.replace("store_", "") for c in chain))
    key = f"crash-chain-{secrets.token_hex(4)}"
    T = int(time.time()) * 1000 + 789
    step = lease * 1000 + 1000
    try:
        deaths = 0
        for i, point in enumerate(chain):
            run = st.post(key, T + i * step, fault=f"{point}:kill")
            cgi_check_run(row, run, f"attempt {i + 1} ({point})", expect_killed=True)
            deaths += run.killed
            if run.out:
                row.problems.append(f"attempt {i + 1} ({point}): output before the crash")
            if point == "store_claim_commit":
                # the take-over's claim never committed: the old lease is
                # still over, so the key is stuck (the next retry takes over)
                cgi_expect_stats(row, st, T + i * step + 1000,
                                 "after the crash in the take-over's claim",
                                 keys=1, in_progress=1, stuck=1, payments=0)
                continue
            r = cgi_check_run(row, st.post(key, T + i * step + 1000),
                              f"retry in lease after {point}")
            if r is not None:
                row.in_lease = r.label()
                if r.status != 409:
                    row.problems.append(f"retry 1 s after the crash at {point}: expected "
                                        f"409, got {r.brief()}")
        row.first = f"SIGKILL x{deaths}"
        got = cgi_expect_stats(row, st, T + len(chain) * step, "after the last crash",
                               keys=1, in_progress=1, stuck=1, charges=1, payments=0)
        ref = cgi_check_run(row, st.post(key, T + len(chain) * step), "last take-over")
        if ref is not None:
            row.after_lease = ref.label() + (" (take-over)" if ref.status == 201
                                             and not ref.replayed else "")
            if ref.status != 201 or ref.replayed:
                row.problems.append(f"last take-over: expected a fresh 201, got {ref.brief()}")
        if ref is not None and ref.status == 201:
            # The first claim (which died at after_claim) recorded them.
            cgi_expect_created(row, ref, T, "the recovery point the first claim wrote")
        got = cgi_expect_stats(row, st, T + len(chain) * step + 1000, "after the 201",
                               keys=1, completed=1, in_progress=0, stuck=0, charges=1,
                               payments=1)
        row.charges, row.payments = got["charges"], got["payments"]
        ident = []
        for i in range(2):
            r = cgi_check_run(row, st.post(key, T + len(chain) * step + 5000 + i), "replay")
            if r is None or ref is None:
                ident.append(f"replay {i + 1}: no answer to compare")
            else:
                ident += replay_problems(ref, r, f"replay {i + 1}")
        row.identical = "no" if ident else "yes"
        row.problems += ident
        return row
    finally:
        st.cleanup(keep and bool(row.problems))


def cgi_replay_killed(build, keep):
    """A worker killed halfway through sending a replay changes nothing."""
    lease = 30
    st = CgiState(build, lease)
    row = CgiRow("replay killed at mid_response")
    key = f"crash-replay-{secrets.token_hex(4)}"
    T = int(time.time()) * 1000 + 789
    try:
        ref = cgi_check_run(row, st.post(key, T), "first")
        row.first = ref.label() if ref else "?"
        run = st.post(key, T + 1000, fault="mid_response:kill")
        cgi_check_run(row, run, "replay with mid_response:kill", expect_killed=True)
        row.in_lease = "SIGKILL mid-replay" if run.killed else run.brief()
        if run.killed and ref is not None:
            try:
                half = parse_cgi(run.out)
                if half.status != 201 or not ref.body.startswith(half.body):
                    row.problems.append("the half replay is not the start of the 201")
            except ValueError as e:
                row.problems.append(f"half replay: {e}")
        r = cgi_check_run(row, st.post(key, T + lease * 1000 + 1000), "replay after")
        row.after_lease = r.label() if r else "?"
        got = cgi_expect_stats(row, st, T + lease * 1000 + 2000, "at the end", keys=1,
                               completed=1, in_progress=0, stuck=0, charges=1, payments=1)
        row.charges, row.payments = got["charges"], got["payments"]
        ident = replay_problems(ref, r, "replay after the killed replay") \
            if ref is not None and r is not None else ["no answers to compare"]
        row.identical = "no" if ident else "yes"
        row.problems += ident
        return row
    finally:
        st.cleanup(keep and bool(row.problems))


def cgi_stalled(build, point, keep):
    """A worker that stalls (not dies) at point past its lease: the retry
    takes over and completes; when the stalled one resumes, every write of
    its claim is refused (owner token, IDEM_ELOST) and the provider returns
    the same charge under the derived key.  One charge, one payment, and the
    stalled worker's late answer is not a second 201."""
    lease = 30
    st = CgiState(build, lease)
    row = CgiRow(f"stalled at {point} past the lease")
    key = f"crash-stall-{point}-{secrets.token_hex(4)}"
    T = int(time.time()) * 1000 + 789
    fifo = os.path.join(st.tmp, "gate.fifo")
    os.mkfifo(fifo)
    holder = {}
    wfd = None
    try:
        gate = {}

        # spawn the first attempt in the background, held at the gate
        def first():
            holder["run"] = st.post(key, T, fault=f"{point}:wait={fifo}")
        th = threading.Thread(target=first, daemon=True)
        th.start()

        # open our end: returns once the responder opened the fifo to read
        def opener():
            try:
                gate["fd"] = os.open(fifo, os.O_WRONLY)
            except OSError as e:
                gate["err"] = e
        ot = threading.Thread(target=opener, daemon=True)
        ot.start()
        end = time.monotonic() + DEADLINE.timeout(20)
        while ot.is_alive() and th.is_alive() and time.monotonic() < end:
            ot.join(0.05)
        ot.join(0.2)
        if "fd" not in gate:
            if ot.is_alive():
                # unblock our own open, then give up
                rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
                ot.join(2)
                os.close(rfd)
                if "fd" in gate:
                    os.close(gate["fd"])
            row.problems.append(f"the first attempt never reached {point} "
                                f"({holder.get('run').brief() if 'run' in holder else 'running'})")
            return row
        wfd = gate["fd"]
        row.first = f"stalled at {point}"
        r = cgi_check_run(row, st.post(key, T + 1000), "retry in lease")
        if r is not None:
            row.in_lease = r.label()
            if r.status != 409:
                row.problems.append(f"retry in lease: expected 409, got {r.brief()}")
        ref = cgi_check_run(row, st.post(key, T + lease * 1000 + 1000), "take-over")
        if ref is not None:
            if ref.status != 201 or ref.replayed:
                row.problems.append(f"take-over: expected a fresh 201, got {ref.brief()}")
        # let the stalled one go on
        os.close(wfd)
        wfd = None
        th.join(DEADLINE.timeout(30))
        late = holder.get("run")
        late_label = "?"
        if late is None:
            row.problems.append("the stalled attempt did not finish")
        else:
            a = cgi_check_run(row, late, "the stalled attempt, resumed")
            if a is not None:
                late_label = a.label()
                if a.status == 201 and not a.replayed:
                    row.problems.append(f"the stalled attempt answered a fresh 201 after "
                                        f"its claim was taken over: {a.brief()}")
                elif a.status == 201 and ref is not None:
                    row.problems += replay_problems(ref, a, "the stalled attempt's answer")
                elif a.status not in (409, 201):
                    row.problems.append(f"the stalled attempt: expected 409 (lost) or the "
                                        f"replay, got {a.brief()}")
        row.after_lease = (ref.label() + " (take-over)" if ref else "?") + \
            f"; stalled one: {late_label}"
        got = cgi_expect_stats(row, st, T + lease * 1000 + 2000, "at the end", keys=1,
                               completed=1, in_progress=0, stuck=0, charges=1, payments=1)
        row.charges, row.payments = got["charges"], got["payments"]
        r = cgi_check_run(row, st.post(key, T + lease * 1000 + 5000), "replay")
        ident = replay_problems(ref, r, "replay") if ref is not None and r is not None \
            else ["no answers to compare"]
        row.identical = "no" if ident else "yes"
        row.problems += ident
        return row
    finally:
        if wfd is not None:
            os.close(wfd)
        st.cleanup(keep and bool(row.problems))


def cgi_beyond_ttl(build, keep):
    """A claim that died after the provider charged may have left a charge:
    it never expires.  A retry that comes only after the key's TTL (24 h)
    resumes it and gets the original charge; the old record is not taken
    for absent, and purge keeps it until then."""
    st = CgiState(build, 30)
    row = CgiRow("after_charge, retried after the 24 h TTL")
    T = int(time.time()) * 1000 + 789
    day = 86400 * 1000
    try:
        run = st.post("crash-ttl", T, fault="after_charge:kill")
        cgi_check_run(row, run, "first attempt", expect_killed=True)
        row.first = "SIGKILL, in_progress, ch=1" if run.killed else run.brief()
        ans = cgi_check_run(row, st.post("crash-ttl", T + day + 1000),
                            "retry after the TTL")
        if ans is not None:
            row.after_lease = ans.label()
            if ans.status != 201:
                row.problems.append(f"retry after the TTL: expected 201, got "
                                    f"{ans.status}")
            cgi_expect_created(row, ans, T, "resumed, not claimed afresh")
        got = cgi_expect_stats(row, st, T + day + 2000, "after the retry",
                               charges=1, payments=1, stuck=0, in_progress=0)
        row.charges, row.payments = got.get("charges"), got.get("payments")
        row.identical = "n/a"
        return row
    finally:
        st.cleanup(keep and bool(row.problems))


REFUND_BODY = b'{"amount": 30.00}'
# Where a refund dies, what the key is then, and how many provider refunds
# the ledger holds: after the claim (the hold placed), after the provider
# refunded and before the completion, after the completion.
REFUND_POINTS = (("after_claim", "in_progress", 0),
                 ("after_refund", "in_progress", 1),
                 ("after_complete", "completed", 1))


def cgi_refund_point(build, point, state, refunds_at_crash, keep):
    """A refund dies at point; a retry in the lease gets 409 (or the
    replay), the retry after it resumes with the same refund id and
    provider key; one provider refund, one refund, replays identical."""
    lease = 30
    st = CgiState(build, lease)
    row = CgiRow(f"refund {point}")
    key = f"crash-refund-{point}-{secrets.token_hex(4)}"
    T = int(time.time()) * 1000 + 789
    try:
        pay = cgi_check_run(row, st.post(f"pay-{key}", T), "payment")
        if pay is None or pay.status != 201:
            row.problems.append("the payment was not made")
            return row
        path = pay.header("Location") + "/refunds"

        def refund(now, fault=None):
            return st.post(key, now, body=REFUND_BODY, fault=fault, path=path)
        run = refund(T, f"{point}:kill")
        cgi_check_run(row, run, "first attempt", expect_killed=True)
        after = st.stats(T)
        row.first = (f"SIGKILL, in_progress={after['in_progress']}, "
                     f"rf={after['provider_refunds']}")
        if after["provider_refunds"] != refunds_at_crash:
            row.problems.append(f"after the crash: {after['provider_refunds']} provider "
                                f"refunds, expected {refunds_at_crash}")
        want_done = 1 if state == "completed" else 0
        if after["refunds"] != want_done or after["in_progress"] != 1 - want_done:
            row.problems.append(f"after the crash: refunds {after['refunds']} in_progress "
                                f"{after['in_progress']}, expected {want_done} and "
                                f"{1 - want_done}")
        if state != "completed" and run.out:
            row.problems.append(f"{len(run.out)} bytes reached the client before the crash")
        r2 = cgi_check_run(row, refund(T + 1000), "retry in lease")
        ref = None
        if r2 is not None:
            row.in_lease = r2.label()
            if state == "in_progress" and r2.status != 409:
                row.problems.append(f"retry in lease: expected 409, got {r2.brief()}")
            if state == "completed":
                if r2.status != 201 or not r2.replayed:
                    row.problems.append(f"retry in lease: expected the replay, got "
                                        f"{r2.brief()}")
                ref = r2
        r3 = cgi_check_run(row, refund(T + lease * 1000 + 1000), "retry after lease")
        later = []
        if r3 is not None:
            row.after_lease = r3.label()
            if r3.status != 201:
                row.problems.append(f"retry after lease: expected 201, got {r3.brief()}")
            if ref is None:
                ref = r3
            else:
                later.append(("retry after lease", r3))
            cgi_expect_created(row, r3, T, "the refund id and time the claim recorded")
        got = cgi_expect_stats(row, st, T + lease * 1000 + 2000, "after the 201",
                               in_progress=0, stuck=0, refunds=1, provider_refunds=1,
                               charges=1, payments=1)
        row.charges, row.payments = got.get("provider_refunds"), got.get("refunds")
        r4 = cgi_check_run(row, refund(T + 3600 * 1000), "replay")
        if r4 is not None:
            later.append(("replay (T+1h)", r4))
        ident = []
        if ref is None or ref.status != 201:
            row.problems.append("no 201 to compare the replays with")
        else:
            for what, r in later:
                ident += replay_problems(ref, r, what)
        row.identical = "no" if ident else "yes"
        row.problems += ident
        # A second refund of 80.00 would exceed what is left (70.00): the
        # first refund's hold became refunded once, not twice or never.
        over = cgi_check_run(row, st.post(f"over-{key}", T + 3600 * 1000,
                                          body=b'{"amount": 80.00}', path=path),
                             "second refund")
        if over is not None and (over.status != 400 or
                                 b"refund-exceeds-payment" not in over.body):
            row.problems.append(f"80.00 more refunded on 100.00 after 30.00: {over.brief()}")
        rest = cgi_check_run(row, st.post(f"rest-{key}", T + 3600 * 1000,
                                          body=b'{"amount": 70.00}', path=path),
                             "the rest")
        if rest is not None and rest.status != 201:
            row.problems.append(f"the 70.00 left was not refundable: {rest.brief()}")
        return row
    finally:
        st.cleanup(keep and bool(row.problems))


def part_cgi(args):
    rows = []
    started = time.monotonic()
    jobs = [(f"cgi: {p}", (lambda p=p, s=s, c=c: cgi_point(args.build, p, s, c, args.keep)))
            for p, s, c, _ in POINTS]
    jobs.append(("cgi: kill twice (after_charge, store_complete_commit)",
                 lambda: cgi_kill_twice(args.build, args.keep)))
    jobs.append(("cgi: crash then other body (422)",
                 lambda: cgi_other_body(args.build, args.keep)))
    jobs.append(("cgi: chain, one death at every point before completion",
                 lambda: cgi_chain(args.build, args.keep)))
    jobs.append(("cgi: after_charge, retried only after the TTL",
                 lambda: cgi_beyond_ttl(args.build, args.keep)))
    jobs.append(("cgi: replay killed mid-response",
                 lambda: cgi_replay_killed(args.build, args.keep)))
    for p, s, n in REFUND_POINTS:
        jobs.append((f"cgi: refund killed at {p}",
                     (lambda p=p, s=s, n=n: cgi_refund_point(args.build, p, s, n,
                                                             args.keep))))
    for p in ("in_provider", "after_charge"):
        jobs.append((f"cgi: stalled at {p} past the lease (owner token)",
                     (lambda p=p: cgi_stalled(args.build, p, args.keep))))
    for name, fn in jobs:
        if DEADLINE.left() <= 0:
            RESULTS.fail(name, "global deadline reached")
            continue
        try:
            row = fn()
        except Exception as e:      # noqa: BLE001 - every error is a FAIL line
            RESULTS.fail(name, f"{type(e).__name__}: {e}")
            continue
        rows.append(row)
        RESULTS.record(name, row.problems)
    print_table(f"CGI crash matrix (lease 30 s, pinned clock; {time.monotonic() - started:.1f} s)",
                MATRIX_HEADER, [r.cells() for r in rows])
