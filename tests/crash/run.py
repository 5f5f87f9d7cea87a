#!/usr/bin/env python3
"""Crash safety (invariant 5): kill -9 anywhere, retry, exactly one charge.

    python3 tests/crash/run.py --build BUILD_DIR [--only cgi|live|load ...]
                               [--server lighttpd-spawn|apache] [--seed N]

BUILD_DIR holds idem-fcgi and idemctl built with --enable-fault-points.

Three parts, each with "ok - crash ..." / "FAIL - crash ...: why" lines:

  cgi   the responder as a plain CGI child with a pinned clock
        (IDEM_TEST_NOW_MS): for every fault point, die there by SIGKILL, retry
        inside the lease (409 + Retry-After, or the replay once completed),
        retry after the lease (the take-over, or the replay), replay twice
        more; one charge, one payment, nothing stuck, replays byte-identical.
        Plus "kill twice" and "crash, then another body".
  live  the same through a real server that respawns dead workers
        (lighttpd-spawn from tests/live/run.py, or Apache mod_fcgid), one
        server per fault point with IDEM_FAULT=POINT:killonce=MARKER and
        IDEM_LEASE=2, the client honouring Retry-After like a real one.
  load  40 client threads paying through a live server while a killer thread
        sends SIGKILL to random workers (seeded RNG, seed printed); then every
        key has its 201, one charge and one payment, no key stuck, and every
        key's replay equals its 201.

The matrices and figures are printed; the last line is
"crash: N passed, M failed" and the exit status is 0 iff M == 0.  Python 3
standard library only; loopback only; everything under one global deadline;
servers and workers are stopped on every exit path.
"""

import argparse
import atexit
import concurrent.futures
import hashlib
import http.client
import importlib.util
import json
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LIVE_PATH = os.path.join(REPO, "tests", "live", "run.py")

BODY = b'{"amount": 100.00, "currency": "BRL"}'
OTHER_BODY = b'{"amount": 250.00, "currency": "BRL"}'
HOST = "127.0.0.1"
SECRET = "sk_test_crash_" + "5d1c0a7e9b3f4e21"
ACCOUNT = "acct_crash"

# Headers a replay need not repeat (generated per message, RFC 9110 6.6.1),
# and the replay marker itself; every other header must be equal.
REPLAY_EXEMPT = {"date", "idempotent-replayed"}
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "runtime error:", "ERROR: UndefinedBehaviorSanitizer",
                   "WARNING: ThreadSanitizer", "ERROR: ThreadSanitizer")

# The fault points, in the order one request passes them, and what a crash
# there must leave behind (invariant 5: absent, in progress, or completed).
#   state      what the store holds right after the kill
#   charges    provider charges right after the kill
#   extra      not in the list; shown for completeness
POINTS = [
    # name                  state          charges extra
    ("store_claim_commit", "absent", 0, True),
    # the leader of a group commit, its batch written, not yet committed
    ("batch_commit", "absent", 0, False),
    ("after_claim", "in_progress", 0, False),
    ("in_provider", "in_progress", 0, False),
    ("after_charge", "in_progress", 1, False),
    ("store_complete_commit", "in_progress", 1, False),
    ("after_complete", "completed", 1, False),
    ("mid_response", "completed", 1, False),
]
POINT_NAMES = [p[0] for p in POINTS]


# ---------------------------------------------------------------- plumbing

class Deadline:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return self.end - time.monotonic()

    def timeout(self, cap=10.0):
        left = self.left()
        if left <= 0:
            raise TimeoutError("global deadline reached")
        return max(0.5, min(cap, left))


DEADLINE = Deadline(230)
VERBOSE = False


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.lock = threading.Lock()

    def ok(self, name):
        with self.lock:
            self.passed += 1
            print(f"ok - crash {name}", flush=True)

    def fail(self, name, why):
        with self.lock:
            self.failed += 1
            why = str(why).rstrip().replace("\n", "\n#   ")
            print(f"FAIL - crash {name}: {why}", flush=True)

    def record(self, name, problems):
        if problems:
            self.fail(name, "; ".join(problems[:1]) +
                      ("" if len(problems) == 1 else
                       "\n" + "\n".join(problems[1:])))
        else:
            self.ok(name)


RESULTS = Results()


def note(msg):
    print(f"# {msg}", flush=True)


def vnote(msg):
    if VERBOSE:
        note(msg)


def has_sanitizer_report(text):
    return next((m for m in SANITIZER_MARKS if m in text), None)


def print_table(title, header, rows):
    cols = [header] + rows
    widths = [max(len(str(r[i])) for r in cols) for i in range(len(header))]
    print(f"\n{title}", flush=True)
    line = "  ".join(str(h).ljust(w) for h, w in zip(header, widths))
    print(line)
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    print(flush=True)


class Answer:
    """One HTTP answer, from CGI output or a socket: status, headers, body."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers              # list of (name, value)
        self.body = body

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    @property
    def replayed(self):
        return (self.header("Idempotent-Replayed") or "").lower() == "true"

    def brief(self):
        return f"{self.status} {self.body[:160]!r}"

    def label(self):
        if self.status == 201:
            return "201 replay" if self.replayed else "201 fresh"
        if self.status == 409:
            return f"409 RA={self.header('Retry-After')}"
        return str(self.status)


def replay_problems(ref, rep, what):
    """Invariant 3: rep is a faithful replay of ref (the first 201 seen)."""
    out = []
    if rep.status != ref.status:
        out.append(f"{what}: status {rep.status}, the 201 was {ref.status}")
    if rep.body != ref.body:
        out.append(f"{what}: body differs: {rep.body[:120]!r} vs {ref.body[:120]!r}")
    if not rep.replayed:
        out.append(f"{what}: Idempotent-Replayed: {rep.header('Idempotent-Replayed')!r}")

    def stored(a):
        return sorted((k.lower(), v) for k, v in a.headers
                      if k.lower() not in REPLAY_EXEMPT)
    a, b = stored(ref), stored(rep)
    if a != b:
        missing = [h for h in a if h not in b]
        extra = [h for h in b if h not in a]
        out.append(f"{what}: headers differ: missing {missing}, extra {extra}")
    return out


# ---------------------------------------------------------------- CGI

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

    def cleanup(self, keep=False):
        if keep:
            note(f"kept {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def base_env(self):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C"}
        for passthru in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
                         "LD_LIBRARY_PATH"):
            if passthru in os.environ:
                env[passthru] = os.environ[passthru]
        env.update({"IDEM_DB_DIR": self.db, "IDEM_PROVIDER_DIR": self.provider,
                    "IDEM_KEYS_FILE": self.keys, "IDEM_LEASE": str(self.lease_s),
                    "IDEM_PROVIDER_LATENCY_MS": "0"})
        return env

    def post(self, key, now_ms, body=BODY, fault=None):
        """One POST /payments as plain CGI.  Returns a CgiRun."""
        env = self.base_env()
        env.update({
            "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.1",
            "SERVER_SOFTWARE": "idem-crash/1", "SERVER_NAME": "localhost",
            "SERVER_PORT": "8080", "REMOTE_ADDR": "127.0.0.1",
            "REMOTE_PORT": "40000", "REQUEST_METHOD": "POST",
            "REQUEST_URI": "/payments", "SCRIPT_NAME": "", "PATH_INFO": "/payments",
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


# ---------------------------------------------------------------- live plumbing

LIVE = None


def load_live():
    """tests/live/run.py as a module, read-only, for its server classes."""
    global LIVE
    if LIVE is None:
        spec = importlib.util.spec_from_file_location("idem_live_run", LIVE_PATH)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mod.DEADLINE = DEADLINE
        LIVE = mod
    return LIVE


class LiveArgs:
    def __init__(self, workers, latency_ms, keep):
        self.workers = workers
        self.latency_ms = latency_ms
        self.keep = keep


def crash_class(server, lease, fault):
    """A subclass of the live server class whose rendered configuration gives
    the workers IDEM_LEASE=lease and IDEM_FAULT=fault (and any sanitizer
    options of ours).  etc/ has no placeholder for them, so the rendered copy
    in the instance's temp directory is edited; etc/ itself is untouched."""
    live = load_live()
    extra = {"IDEM_FAULT": fault} if fault else {}
    for v in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if v in os.environ:
            extra[v] = os.environ[v]

    def edit(path, pattern, repl, insert_fmt):
        with open(path) as f:
            text = f.read()
        text, n = re.subn(pattern, repl, text, count=1)
        if n != 1:
            raise RuntimeError(f"{path}: no IDEM_LEASE setting to change "
                               f"(the template in etc/ changed?)")
        m = re.search(pattern.replace(r"\d+", str(lease)), text)
        ins = "".join(insert_fmt.format(k=k, v=v) for k, v in extra.items())
        end = text.index("\n", m.start()) + 1
        text = text[:end] + ins + text[end:]
        with open(path, "w") as f:
            f.write(text)

    if server == "lighttpd-spawn":
        class CrashLighttpdSpawn(live.LighttpdSpawn):
            def configure(self):
                super().configure()
                os.makedirs(os.path.join(self.root, "markers"))
                edit(self.conf, r'("IDEM_LEASE"\s*=>\s*)"\d+"', rf'\g<1>"{lease}"',
                     '          "{k}" => "{v}",\n')
        return CrashLighttpdSpawn
    if server == "apache":
        class CrashApache(live.Apache):
            def configure(self):
                super().configure()
                os.makedirs(os.path.join(self.root, "markers"))
                edit(os.path.join(self.root, "idem-site.conf"),
                     r"(FcgidInitialEnv\s+IDEM_LEASE\s+)\d+", rf"\g<1>{lease}",
                     '    FcgidInitialEnv {k} "{v}"\n')
        return CrashApache
    raise ValueError(server)


def start_instance(server, workers, lease, latency_ms, fault_fmt, keep, disarmed=()):
    """Starts one server; fault_fmt may hold {markers} (the marker directory).
    The files named in disarmed are created in it first: a killonce fault
    whose marker exists never fires, so the health checks of the start-up
    (mid_response is on every response's path) cannot spend it; the test
    arms it by removing the marker just before its request."""
    live = load_live()
    # the marker path depends on the temp directory, which the constructor
    # makes: build the fault string lazily through a class attribute.
    holder = {}

    base = crash_class(server, lease, "@FAULT@" if fault_fmt else None)

    class Inst(base):
        def configure(self):
            super().configure()
            if fault_fmt:
                fault = fault_fmt.format(markers=os.path.join(self.root, "markers"))
                holder["fault"] = fault
                for m in disarmed:
                    open(os.path.join(self.root, "markers", m), "w").close()
                for path in (getattr(self, "conf", ""),
                             os.path.join(self.root, "idem-site.conf")):
                    if path and os.path.exists(path):
                        with open(path) as f:
                            text = f.read()
                        if "@FAULT@" in text:
                            with open(path, "w") as f:
                                f.write(text.replace("@FAULT@", fault))
    inst = Inst(server, BUILD, LiveArgs(workers, latency_ms, keep))
    try:
        inst.start()
        if isinstance(inst, live.Apache):
            # mod_fcgid spawns on demand: bring the pool up to its minimum
            bring_up(inst, workers)
    except BaseException:
        cleanup_instance(inst)
        raise
    inst.fault = holder.get("fault")
    return inst


def bring_up(inst, workers, seconds=10):
    end = time.monotonic() + seconds
    while time.monotonic() < end and len(inst.worker_pids()) < workers:
        with concurrent.futures.ThreadPoolExecutor(workers * 2) as pool:
            list(pool.map(lambda _: http_get(inst.port, "/healthz", 5), range(workers * 2)))
        time.sleep(0.1)


def cleanup_instance(inst):
    live = load_live()
    try:
        inst.cleanup()
    finally:
        if inst in live.INSTANCES:
            live.INSTANCES.remove(inst)


def worker_log_problems(inst):
    out = []
    for path in inst.logs:
        try:
            with open(path, errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        mark = has_sanitizer_report(text)
        if mark:
            i = text.index(mark)
            out.append(f"{os.path.basename(path)}: sanitizer report: "
                       f"{text[max(0, i - 200):i + 600]}")
    return out


class Outcome:
    """What a client saw: an answer, or how the exchange failed."""

    def __init__(self, answer=None, error=None, status=None, partial=None):
        self.answer = answer
        self.error = error          # None, or "reset", "closed", "refused", ...
        self.status = status        # for a truncated answer
        self.partial = partial

    @property
    def status_code(self):
        return self.answer.status if self.answer else None

    def label(self):
        if self.answer is not None:
            return self.answer.label()
        if self.error == "truncated":
            return f"{self.status} truncated ({len(self.partial)} body bytes)"
        return f"conn {self.error}"


def http_exchange(port, method, path, body=None, headers=None, timeout=10.0):
    conn = http.client.HTTPConnection(HOST, port, timeout=min(timeout, DEADLINE.timeout(timeout)))
    status = hdrs = None
    try:
        h = {"Connection": "close"}
        h.update(headers or {})
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        status, hdrs = r.status, r.getheaders()
        data = r.read()
        return Outcome(Answer(r.status, hdrs, data))
    except http.client.IncompleteRead as e:
        return Outcome(error="truncated", status=status, partial=e.partial)
    except (socket.timeout, TimeoutError):
        return Outcome(error="timeout")
    except ConnectionRefusedError:
        return Outcome(error="refused")
    except ConnectionResetError:
        return Outcome(error="reset")
    except BrokenPipeError:
        return Outcome(error="broken pipe")
    except http.client.RemoteDisconnected:
        return Outcome(error="closed without answer")
    except (OSError, http.client.HTTPException) as e:
        return Outcome(error=type(e).__name__)
    finally:
        conn.close()


def http_get(port, path, timeout=5.0):
    return http_exchange(port, "GET", path, timeout=timeout)


def pay(port, secret, key, body=BODY, timeout=10.0):
    return http_exchange(port, "POST", "/payments", body,
                         {"Content-Type": "application/json",
                          "Authorization": f"Bearer {secret}",
                          "Idempotency-Key": f'"{key}"'}, timeout)


def pay_through(port, secret, key, budget):
    """POST, retrying 5xx and transport failures for up to budget seconds
    (50 ms apart): returns the first real answer and the failures before it."""
    end = time.monotonic() + budget
    failures = []
    while True:
        o = pay(port, secret, key)
        if o.answer is not None and o.answer.status < 500:
            return o, failures
        if time.monotonic() + 0.05 > end:
            return o, failures
        failures.append(o.label())
        time.sleep(0.05)


def retry_after(ans, cap):
    ra = ans.header("Retry-After") or ""
    return min(int(ra), cap) if ra.isdigit() else 1


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
        eager = isinstance(inst, load_live().LighttpdSpawn)
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


# ---------------------------------------------------------------- kill under load

class LoadStats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.requests = 0

    def add(self, label, request=True):
        with self.lock:
            self.requests += request
            self.counts[label] = self.counts.get(label, 0) + 1


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
                for m in re.finditer(r"POST /payments (\d+) key=\S+ outcome=(\S+)", f.read()):
                    counts[m.group(2)] = counts.get(m.group(2), 0) + 1
        except OSError:
            continue
    return counts


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
            while time.monotonic() < end:
                o = pay(inst.port, sec, key, timeout=10)
                c = classify(o)
                stats.add(c)
                if c == "5xx":
                    stats.add(f"status {o.answer.status}", request=False)
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
            with results_lock:
                results[key] = f"no 201 within {per_key_budget:.0f} s (last {last})"

        def client(cid):
            crng = random.Random(f"{seed}-{cid}")
            n = 0
            # keep the workers busy for as long as the killer runs
            while not stop.is_set() and (n == 0 or killing.is_set()):
                one_key(cid, n, crng)
                n += 1

        def killer():
            try:
                while len(kills) < nkills and not stop.is_set():
                    time.sleep(rng.uniform(0.1, 0.3))
                    pids = inst.worker_pids()
                    if not pids:
                        continue
                    pid = rng.choice(pids)
                    try:
                        os.kill(pid, signal.SIGKILL)
                        kills.append(pid)
                    except ProcessLookupError:
                        pass
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
        load_s = time.monotonic() - started

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
        c = stats.counts
        figures = [
            ["keys (payments attempted)", len(keys)],
            ["requests sent", stats.requests],
            ["kills (SIGKILL to a worker)", len(kills)],
            ["201 fresh", c.get("201", 0)],
            ["201 replay (the first 201 a client saw was a replay)", c.get("201-replay", 0)],
            ["409 (honoured Retry-After)", c.get("409", 0)],
            ["5xx", f"{c.get('5xx', 0)} (" + ", ".join(
                f"{k[7:]}: {v}" for k, v in sorted(c.items()) if k.startswith("status "))
             + ")"],
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
        if workers_now < args.load_workers and isinstance(inst, load_live().LighttpdSpawn):
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


# ---------------------------------------------------------------- main

BUILD = None


def _cleanup_all():
    if LIVE is not None:
        LIVE._cleanup_all()


def main():
    global DEADLINE, VERBOSE, BUILD
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory (fault points on)")
    ap.add_argument("--only", action="append", choices=("cgi", "live", "load"),
                    help="part to run (repeatable; default: all)")
    ap.add_argument("--server", choices=("lighttpd-spawn", "apache"),
                    help="live server (default: lighttpd-spawn, else apache)")
    ap.add_argument("--workers", type=int, default=4, help="workers for the live matrix")
    ap.add_argument("--load-workers", type=int, default=6, help="workers under load")
    ap.add_argument("--clients", type=int, default=40, help="client threads under load")
    ap.add_argument("--kills", type=int, default=25, help="SIGKILLs under load")
    ap.add_argument("--latency-ms", type=int, default=50,
                    help="IDEM_PROVIDER_LATENCY_MS under load")
    ap.add_argument("--seed", type=int, help="seed of the killer (default: random, printed)")
    ap.add_argument("--deadline", type=float, default=230, help="whole run, seconds")
    ap.add_argument("--keep", action="store_true", help="keep temp dirs of failures")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    DEADLINE = Deadline(args.deadline)
    VERBOSE = args.verbose
    BUILD = args.build = os.path.abspath(args.build)
    parts = args.only or ["cgi", "live", "load"]
    if args.workers < 4:
        ap.error("--workers must be >= 4")

    for prog in ("idem-fcgi", "idemctl"):
        if not os.access(os.path.join(BUILD, prog), os.X_OK):
            print(f"FAIL - crash setup: {BUILD}/{prog} missing")
            print("crash: 0 passed, 1 failed")
            return 1

    atexit.register(_cleanup_all)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))

    started = time.monotonic()
    try:
        if "cgi" in parts:
            part_cgi(args)
        if "live" in parts or "load" in parts:
            live = load_live()
            live._become_subreaper()
            t0 = time.monotonic()
            server, why = pick_server(args)
            for w in why:
                note(f"server not usable: {w}")
            if server is None:
                RESULTS.fail("live: start", "no respawning server could be started:\n"
                             + "\n".join(why))
            else:
                note(f"live server: {server} (probe {time.monotonic() - t0:.1f} s)")
                if "live" in parts:
                    part_live(args, server)
                if "load" in parts:
                    if DEADLINE.left() < 30:
                        RESULTS.fail(f"load {server}", "global deadline too close")
                    else:
                        try:
                            part_load(args, server)
                        except Exception as e:      # noqa: BLE001
                            RESULTS.fail(f"load {server}", f"{type(e).__name__}: {e}")
    except (SystemExit, KeyboardInterrupt) as e:
        RESULTS.fail("run", f"interrupted ({type(e).__name__} {e})")
    finally:
        _cleanup_all()
    note(f"total: {time.monotonic() - started:.1f} s")
    print(f"crash: {RESULTS.passed} passed, {RESULTS.failed} failed", flush=True)
    return 0 if RESULTS.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
