#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The completer (idemctl resume), idemctl as a Unix tool, and the
systemd units that run them.

    python3 tests/completer.py --build BUILD_DIR [--store lmdb|pg]
                               [--suite NAME] [-v] [test ...]

Each test gets a fresh temporary directory (the LMDB store or, with
--store pg, a fresh database on a throwaway server from tests/lib/pg.py;
the in-process provider's ledger; a keys file) and drives the real
programs: idem-fcgi as a plain CGI child for the client's requests and
GET /metrics, idemctl for everything else.  Time is the injectable clock
(IDEM_TEST_NOW_MS), and a process is held at the provider call with a
fifo gate (IDEM_FAULT=in_provider:wait=PATH), so nothing waits on the
wall clock.  BUILD_DIR must be configured with --enable-fault-points.

One line per test, "ok - NAME" or "FAIL - NAME: why", then
"SUITE: N passed, M failed"; the exit status is 0 iff nothing failed.
"""

import argparse
import hashlib
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib.common import Results, has_sanitizer_report  # noqa: E402
from lib import pg  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
T0 = 1796042096789          # the injectable clock's start, ms
LEASE_MS = 30000
ACCOUNTS = {"acct_alice": "sk_test_alice_4f1b2b0b822cd15d",
            "metrics": "sk_test_metrics_77e0c1d2a9b3f405"}
BODY = '{"amount": 100.00, "currency": "BRL"}'
TIMEOUT = 60


class Fail(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Fail(what)


class Env:
    """One test's store, ledger and keys, and the programs run on them."""

    def __init__(self, build, pgserver, name, verbose):
        self.build = build
        self.verbose = verbose
        self.tmp = tempfile.mkdtemp(prefix="idem-completer-%s-" % name)
        for d in ("db", "provider"):
            os.mkdir(os.path.join(self.tmp, d))
        keys = os.path.join(self.tmp, "keys")
        with open(keys, "w") as f:
            for acct, secret in ACCOUNTS.items():
                f.write("%s %s\n" % (acct, hashlib.sha256(
                    secret.encode()).hexdigest()))
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "IDEM_DB_DIR": os.path.join(self.tmp, "db"),
                    "IDEM_PROVIDER": "simulated",
                    "IDEM_PROVIDER_DIR": os.path.join(self.tmp, "provider"),
                    "IDEM_KEYS_FILE": keys,
                    "IDEM_LEASE": str(LEASE_MS // 1000)}
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TMPDIR"):
            if k in os.environ:
                self.env[k] = os.environ[k]
        self.pg, self.db = pgserver, None
        if pgserver is not None:
            self.db = "idem_" + os.path.basename(self.tmp).replace("-", "_")
            self.env["IDEM_STORE"] = pgserver.createdb(self.db)
            p = self.ctl("migrate")
            expect(p.returncode == 0, "idemctl migrate: %s" % p.stderr)
        self.gates = {}

    def close(self):
        for fd in self.gates.values():
            if fd is not None:
                os.close(fd)
        if self.db is not None:
            self.pg.dropdb(self.db)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _env(self, extra):
        env = dict(self.env)
        for k, v in (extra or {}).items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = str(v)
        return env

    @staticmethod
    def _clean(stderr, what):
        mark = has_sanitizer_report(stderr)
        if mark:
            raise Fail("%s: %s\n%s" % (what, mark, stderr))

    # -- the client: idem-fcgi as a CGI child -------------------------

    def request(self, method, path, key=None, body=None, account="acct_alice",
                extra=None):
        env = self._env(extra)
        env.update({"GATEWAY_INTERFACE": "CGI/1.1",
                    "SERVER_PROTOCOL": "HTTP/1.1",
                    "SERVER_NAME": "localhost", "SERVER_PORT": "8080",
                    "REMOTE_ADDR": "127.0.0.1", "REQUEST_METHOD": method,
                    "REQUEST_URI": path, "SCRIPT_NAME": "",
                    "PATH_INFO": path, "QUERY_STRING": "",
                    "HTTP_HOST": "localhost:8080",
                    "HTTP_AUTHORIZATION": "Bearer " + ACCOUNTS[account]})
        data = b""
        if key is not None:
            env["HTTP_IDEMPOTENCY_KEY"] = '"%s"' % key
        if body is not None:
            data = body.encode()
            env["CONTENT_TYPE"] = "application/json"
            env["CONTENT_LENGTH"] = str(len(data))
        p = subprocess.run([os.path.join(self.build, "idem-fcgi")], env=env,
                           input=data, capture_output=True, timeout=TIMEOUT,
                           cwd=self.tmp)
        err = p.stderr.decode("utf-8", "replace")
        self._clean(err, "%s %s" % (method, path))
        if p.returncode < 0:
            return -p.returncode, {}, b""
        head, _, out = p.stdout.partition(b"\r\n\r\n")
        headers = {}
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        status = int(headers.get("status", "200").split()[0])
        if self.verbose:
            print("#   %s %s -> %d %s" % (method, path, status, out[:200]))
        return status, headers, out

    def pay(self, key, at_ms, body=BODY, extra=None):
        e = {"IDEM_TEST_NOW_MS": at_ms}
        e.update(extra or {})
        return self.request("POST", "/payments", key, body, extra=e)

    def metrics(self, at_ms):
        status, _, out = self.request("GET", "/metrics", account="metrics",
                                      extra={"IDEM_TEST_NOW_MS": at_ms})
        expect(status == 200, "GET /metrics: %d" % status)
        text = out.decode()
        # One family each: HELP and TYPE once, before its samples.
        for fam, kind in (("idem_resumes_total", "counter"),
                          ("idem_stuck_claims", "gauge")):
            expect(text.count("# TYPE %s " % fam) == 1 and
                   "# TYPE %s %s\n" % (fam, kind) in text and
                   text.count("# HELP %s " % fam) == 1,
                   "/metrics: the family %s is not one %s" % (fam, kind))
        got = {}
        for line in text.split("\n"):
            m = re.match(r"^(idem_[a-z_]+(?:\{[^}]*\})?) (\d+)$", line)
            if m:
                got[m.group(1)] = int(m.group(2))
        return got

    # -- the operator: idemctl ----------------------------------------

    def ctl(self, *args, extra=None, stderr=None):
        p = subprocess.run([os.path.join(self.build, "idemctl")] +
                           list(args), env=self._env(extra),
                           stdin=subprocess.DEVNULL, capture_output=stderr
                           is None, stderr=stderr, timeout=TIMEOUT,
                           cwd=self.tmp, text=True)
        if stderr is None:
            self._clean(p.stderr, "idemctl " + " ".join(args))
        if self.verbose:
            print("#   idemctl %s -> %d %s" % (" ".join(args), p.returncode,
                                               (p.stdout or "").strip()))
        return p

    def ctl_json(self, *args, at_ms=None, extra=None, want=0):
        e = dict(extra or {})
        if at_ms is not None:
            e["IDEM_TEST_NOW_MS"] = at_ms
        p = self.ctl(*args, extra=e)
        expect(p.returncode == want, "idemctl %s exited %d, not %d: %s" %
               (" ".join(args), p.returncode, want, p.stderr.strip()))
        try:
            return json.loads(p.stdout)
        except ValueError as e:
            raise Fail("idemctl %s: not JSON (%s): %r" %
                       (" ".join(args), e, p.stdout))

    def resume(self, at_ms, *args, extra=None):
        return self.ctl_json("resume", "--json", *args, at_ms=at_ms,
                             extra=extra)

    def stats(self):
        return self.ctl_json("stats", "--json")

    def spawn_ctl(self, *args, extra=None):
        return subprocess.Popen([os.path.join(self.build, "idemctl")] +
                                list(args), env=self._env(extra),
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                cwd=self.tmp)

    # -- fifo gates (IDEM_FAULT=in_provider:wait=PATH) -----------------

    def gate(self, name):
        path = os.path.join(self.tmp, "gate-" + name)
        os.mkfifo(path)
        self.gates[name] = None
        return path

    def reached(self, name, proc):
        """Returns once proc holds the gate open at its fault point."""
        path = os.path.join(self.tmp, "gate-" + name)
        box = {}

        def opener():
            box["fd"] = os.open(path, os.O_WRONLY)
        t = threading.Thread(target=opener, daemon=True)
        t.start()
        t.join(TIMEOUT)
        if "fd" not in box:
            proc.kill()
            raise Fail("gate %s never reached: %s" %
                       (name, proc.communicate()[1]))
        self.gates[name] = box["fd"]

    def release(self, name):
        os.close(self.gates[name])
        self.gates[name] = None


def finish(proc, what):
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise Fail("%s hung" % what)
    mark = has_sanitizer_report(err)
    expect(not mark, "%s: %s\n%s" % (what, mark, err))
    expect(proc.returncode == 0, "%s exited %d: %s" %
           (what, proc.returncode, err))
    return json.loads(out)


def stuck_by_timeout(e, key, at_ms=T0):
    """A payment whose provider charged and whose answer was lost: 504,
    the claim kept with its lease ended, and no retry."""
    status, _, _ = e.pay(key, at_ms, extra={"IDEM_PROVIDER_FAIL": "timeout"})
    expect(status == 504, "POST with a provider timeout: %d" % status)


def counts(got, **want):
    bad = ["%s=%s (want %s)" % (k, got.get(k), v) for k, v in want.items()
           if got.get(k) != v]
    expect(not bad, "; ".join(bad) + " in %s" % got)


def check_replay(e, key, at_ms):
    status, h, body = e.pay(key, at_ms)
    expect(status == 201, "the client's retry: %d %s" % (status, body))
    expect(h.get("idempotent-replayed") == "true",
           "the retry is not a replay: %s" % h)
    doc = json.loads(body)
    expect(doc["amount"] == 100.0 and doc["currency"] == "BRL" and
           doc["status"] == "succeeded", "replayed body: %s" % doc)
    expect(h.get("location") == "/payments/" + doc["id"],
           "Location %s for %s" % (h.get("location"), doc["id"]))
    status, _, got = e.request("GET", "/payments/" + doc["id"],
                               extra={"IDEM_TEST_NOW_MS": at_ms})
    expect(status == 200, "GET the resumed payment: %d" % status)
    return doc


# ---------------------------------------------------------------- tests

def test_timeout_resumed(e):
    """The issue's case: a provider timeout, no retry; resume completes it
    with the one charge; the client's later retry replays the 201."""
    stuck_by_timeout(e, "to-1")
    counts(e.stats(), in_progress=1, stuck=1, charges=1, payments=0)
    m = e.metrics(T0 + 1000)
    expect(m.get("idem_stuck_claims") == 1, "stuck gauge: %s" %
           m.get("idem_stuck_claims"))
    stuck = e.ctl_json("stuck", "--json", at_ms=T0 + 1000)
    expect(len(stuck) == 1 and stuck[0]["state"] == "lease_expired" and
           stuck[0]["stage"] == 1, "stuck --json: %s" % stuck)
    # stuck shows the claim as inspect does, field for field, and its
    # line says the same.
    seen = e.ctl_json("inspect", "--json", "acct_alice", "to-1",
                      at_ms=T0 + 1000)
    expect(stuck == [seen] and seen["expires_ms"] > seen["created_ms"] > 0
           and seen["lease_ms"] > 0 and seen["attempts"] == 1,
           "stuck --json %s, inspect --json %s" % (stuck, seen))
    line = e.ctl("stuck", extra={"IDEM_TEST_NOW_MS": T0 + 1000}).stdout
    expect(line == "acct_alice %s attempts=1 stage=1 lease_ended_s_ago=%d\n"
           % (seen["keyhash"], seen["lease_ended_s_ago"]),
           "stuck: %r" % line)
    counts(e.resume(T0 + 1000), seen=1, completed=1, released=0, left=0,
           busy=0)
    counts(e.stats(), in_progress=0, completed=1, charges=1, payments=1)
    m = e.metrics(T0 + 2000)
    counts(m, **{'idem_resumes_total{outcome="completed"}': 1,
                 'idem_resumes_total{outcome="released"}': 0,
                 'idem_resumes_total{outcome="left"}': 0,
                 "idem_stuck_claims": 0})
    doc = check_replay(e, "to-1", T0 + 60000)
    counts(e.stats(), charges=1, payments=1)
    # The resumed answer is what the client's own retry would have got.
    listed = json.loads(e.request("GET", "/payments",
                                  extra={"IDEM_TEST_NOW_MS": T0})[2])
    ids = [p["id"] for p in listed.get("data", listed.get("payments", []))] \
        if isinstance(listed, dict) else [p["id"] for p in listed]
    expect(ids == [doc["id"]], "the account lists %s" % ids)
    # Nothing is left to resume.
    counts(e.resume(T0 + 120000), seen=0, completed=0)


def test_refund_resumed(e):
    """A refund left by a provider timeout and no retry: resume refunds
    once under the refund's derived key, settles the hold (the payment
    shows the amount refunded), and the client's retry replays the 201."""
    status, h, body = e.pay("pr-1", T0)
    expect(status == 201, "the payment: %d" % status)
    pid = json.loads(body)["id"]
    target = "/payments/%s/refunds" % pid
    ask = '{"amount": 30.00}'
    status, _, _ = e.request("POST", target, "rf-1", ask, extra={
        "IDEM_TEST_NOW_MS": T0 + 1, "IDEM_PROVIDER_FAIL": "timeout"})
    expect(status == 504, "the refund with a provider timeout: %d" % status)
    counts(e.stats(), in_progress=1, refunds=0, provider_refunds=1)
    counts(e.resume(T0 + 1000), seen=1, completed=1, left=0)
    counts(e.stats(), in_progress=0, refunds=1, provider_refunds=1,
           charges=1)
    status, h, body = e.request("POST", target, "rf-1", ask,
                                extra={"IDEM_TEST_NOW_MS": T0 + 2000})
    expect(status == 201 and h.get("idempotent-replayed") == "true",
           "the client's retry: %d %s" % (status, h))
    doc = json.loads(body)
    expect(doc["amount"] == 30.0 and doc["payment"] == pid,
           "the refund: %s" % doc)
    status, _, body = e.request("GET", "/payments/" + pid,
                                extra={"IDEM_TEST_NOW_MS": T0 + 2000})
    got = json.loads(body).get("amount_refunded")
    expect(status == 200 and got == 30.0, "amount_refunded: %s" % got)
    counts(e.stats(), refunds=1, provider_refunds=1)


def test_sealed_resumed(e):
    """With the store sealed at rest (IDEM_SECRET_FILE), the completer
    opens the recovery points it walks and resumes a payment and a refund
    left by provider timeouts; nothing of the stuck payment is in clear."""
    secret = os.path.join(e.tmp, "secret")
    p = e.ctl("new-secret", secret)
    expect(p.returncode == 0, "new-secret: %d %s" % (p.returncode, p.stderr))
    e.env["IDEM_SECRET_FILE"] = secret
    status, _, body = e.pay("sp-1", T0)
    expect(status == 201, "the payment: %d" % status)
    pid = json.loads(body)["id"]
    stuck_by_timeout(e, "sp-2", T0 + 1)
    status, _, _ = e.request("POST", "/payments/%s/refunds" % pid, "sr-1",
                             '{"amount": 12.34}', extra={
                                 "IDEM_TEST_NOW_MS": T0 + 2,
                                 "IDEM_PROVIDER_FAIL": "timeout"})
    expect(status == 504, "the refund with a provider timeout: %d" % status)
    counts(e.resume(T0 + 1000), seen=2, completed=2, left=0)
    counts(e.stats(), in_progress=0, payments=2, charges=2, refunds=1,
           provider_refunds=1)
    check_replay(e, "sp-2", T0 + 2000)


def test_lease_respected(e):
    """A claim within its lease (its worker may still run) is left alone;
    once the lease ran out it is resumed, and the provider, never reached
    before, charges once."""
    status, _, _ = e.pay("crash-1", T0,
                         extra={"IDEM_FAULT": "after_claim:kill"})
    expect(status == signal.SIGKILL, "the worker was not killed: %d" % status)
    counts(e.resume(T0 + LEASE_MS - 1), seen=0, completed=0)
    rec = e.ctl_json("inspect", "--json", "acct_alice", "crash-1",
                     at_ms=T0 + 1)
    counts(rec, state="in_progress", attempts=1)
    counts(e.stats(), in_progress=1, charges=0)
    counts(e.resume(T0 + LEASE_MS), seen=1, completed=1)
    counts(e.stats(), in_progress=0, completed=1, charges=1, payments=1)
    check_replay(e, "crash-1", T0 + LEASE_MS + 5000)
    counts(e.stats(), charges=1, payments=1)


def test_stage0_released(e):
    """A claim at stage 0 (no recovery point: the provider was never
    called) is released by resume --all, which walks every key; the
    default run reads only the index of claims that may have charged."""
    bad = '{"amount": -1, "currency": "BRL"}'
    status, _, _ = e.pay("s0-1", T0, body=bad,
                         extra={"IDEM_FAULT": "after_claim:kill"})
    expect(status == signal.SIGKILL, "the worker was not killed: %d" % status)
    counts(e.stats(), keys=1, in_progress=1, pending=0)
    counts(e.resume(T0 + LEASE_MS), seen=0)
    counts(e.resume(T0 + LEASE_MS, "--all"), seen=1, released=1,
           completed=0)
    counts(e.stats(), keys=0, charges=0)
    status, _, _ = e.pay("s0-1", T0 + LEASE_MS + 1, body=bad)
    expect(status == 400, "the retry after the release: %d" % status)
    m = e.metrics(T0 + LEASE_MS + 2)
    counts(m, **{'idem_resumes_total{outcome="released"}': 1})


def test_two_resumers(e):
    """Two resume processes at once over the same stuck claims: the claim
    one holds at the provider has a fresh lease, so the other passes it
    by and a client retry meanwhile gets 409; every claim is resumed
    once, each by one process."""
    keys = ["two-%d" % i for i in range(3)]
    for k in keys:
        stuck_by_timeout(e, k)
    at = T0 + 1000
    g = e.gate("a")
    a = e.spawn_ctl("resume", "--json",
                    extra={"IDEM_TEST_NOW_MS": at,
                           "IDEM_FAULT": "in_provider:wait=" + g})
    e.reached("a", a)
    b = e.resume(at)
    counts(b, seen=2, completed=2, left=0)
    answers = [e.pay(k, at + 1)[0] for k in keys]
    expect(sorted(answers) == [201, 201, 409],
           "client retries while one is held: %s" % answers)
    e.release("a")
    ra = finish(a, "the held resume")
    # Its walk had gathered all three before it took the first; the two
    # the other completed meanwhile are replays now, left untouched.
    counts(ra, seen=3, completed=1, left=0, released=0)
    counts(e.stats(), in_progress=0, completed=3, charges=3, payments=3)
    m = e.metrics(at + 2)
    counts(m, **{'idem_resumes_total{outcome="completed"}': 3})
    for k in keys:
        check_replay(e, k, at + 3)
    counts(e.stats(), charges=3, payments=3)


def test_provider_down_left(e):
    """The provider unavailable when resuming: the claim is left for the
    next run (a charge may exist from the first attempt, so it is never
    released), counted, and the next run completes it."""
    stuck_by_timeout(e, "down-1")
    counts(e.resume(T0 + 1000, extra={"IDEM_PROVIDER_FAIL": "unavailable"}),
           seen=1, left=1, completed=0, released=0)
    counts(e.stats(), in_progress=1, stuck=1, charges=1, payments=0)
    counts(e.metrics(T0 + 1001),
           **{'idem_resumes_total{outcome="left"}': 1,
              "idem_stuck_claims": 1})
    counts(e.resume(T0 + 3000), seen=1, completed=1)
    counts(e.stats(), in_progress=0, charges=1, payments=1)
    check_replay(e, "down-1", T0 + 4000)


def test_decline_stored(e):
    """A claim whose provider declines on resume: the 402 is stored as
    the client would have got it, and replayed to its retry."""
    status, _, _ = e.pay("dec-1", T0, extra={"IDEM_FAULT": "after_claim:kill"})
    expect(status == signal.SIGKILL, "the worker was not killed: %d" % status)
    counts(e.resume(T0 + LEASE_MS, extra={"IDEM_PROVIDER_FAIL": "decline"}),
           seen=1, completed=1)
    counts(e.stats(), completed=1, declines=1, charges=0, payments=0)
    status, h, body = e.pay("dec-1", T0 + LEASE_MS + 1)
    expect(status == 402 and h.get("idempotent-replayed") == "true",
           "the retry: %d %s" % (status, h))
    doc = json.loads(body)
    expect(doc["type"].endswith("/payment-declined") or "declin" in
           doc["type"], "problem type %s" % doc["type"])


def test_signal_stops(e):
    """SIGTERM stops resume after the claim at hand; the rest stays for
    the next run."""
    for k in ("sig-1", "sig-2"):
        stuck_by_timeout(e, k)
    g = e.gate("s")
    a = e.spawn_ctl("resume", "--json", "--batch", "1",
                    extra={"IDEM_TEST_NOW_MS": T0 + 1000,
                           "IDEM_FAULT": "in_provider:wait=" + g})
    e.reached("s", a)
    a.send_signal(signal.SIGTERM)
    e.release("s")
    ra = finish(a, "resume stopped by SIGTERM")
    counts(ra, seen=1, completed=1, interrupted=True)
    counts(e.stats(), in_progress=1, completed=1)
    counts(e.resume(T0 + 2000), seen=1, completed=1)


def test_batch_limit(e):
    """--batch bounds each walk, --limit the run."""
    for i in range(5):
        stuck_by_timeout(e, "lim-%d" % i)
    counts(e.resume(T0 + 1000, "--batch", "2", "--limit", "3"), seen=3,
           completed=3)
    counts(e.stats(), in_progress=2)
    counts(e.resume(T0 + 1000, "--batch", "1"), seen=2, completed=2)
    counts(e.stats(), in_progress=0, payments=5, charges=5)


def test_cli(e):
    """--help and --version (exit 0), usage errors (2), an absent key (3),
    a store that cannot open (1), -d over IDEM_DB_DIR, and --json that
    json.loads reads."""
    p = e.ctl("--help")
    expect(p.returncode == 0 and "usage: idemctl" in p.stdout and
           "resume" in p.stdout, "--help: %d %r" % (p.returncode, p.stdout))
    p = e.ctl("--version")
    expect(p.returncode == 0 and re.match(r"^idemctl \(idem\) \d+\.\d+",
                                          p.stdout),
           "--version: %d %r" % (p.returncode, p.stdout))
    for bad in (["--bogus"], [], ["stats", "extra"], ["resume", "--limit",
                                                      "0"],
                ["resume", "--batch", "x"], ["inspect", "acct_alice"],
                ["purge", "-n", "-5"], ["frobnicate"]):
        p = e.ctl(*bad)
        expect(p.returncode == 2 and "usage" in p.stderr,
               "idemctl %s: %d %r" % (" ".join(bad), p.returncode, p.stderr))
    # A key absent from a store that exists (the responder made it): 3.
    stuck_by_timeout(e, "cli-1")
    doc = e.ctl_json("inspect", "--json", "acct_alice", "nope", want=3)
    counts(doc, state="absent")
    p = e.ctl("inspect", "acct_alice", "nope")
    expect(p.returncode == 3, "inspect of an absent key: %d" % p.returncode)
    for args in (["stats", "--json"], ["--json", "stats"],
                 ["stuck", "--json"], ["inspect", "--json", "acct_alice",
                                       "cli-1"]):
        e.ctl_json(*args)
    text = e.ctl("stats").stdout
    expect("in_progress: 1\n" in text, "stats text: %r" % text)
    if e.db is None:
        # -d over the environment: the same store named on the command
        # line, and a directory that is a file fails (1).
        p = e.ctl("-d", e.env["IDEM_DB_DIR"], "stats", "--json",
                  extra={"IDEM_DB_DIR": os.path.join(e.tmp, "elsewhere")})
        expect(p.returncode == 0 and json.loads(p.stdout)["keys"] == 1,
               "-d: %d %s" % (p.returncode, p.stdout))
        notdir = os.path.join(e.tmp, "file")
        open(notdir, "w").close()
        p = e.ctl("-d", notdir, "stats")
        expect(p.returncode == 1, "a store that cannot open: %d" %
               p.returncode)
    else:
        p = e.ctl("-s", e.env["IDEM_STORE"], "stats", "--json",
                  extra={"IDEM_STORE": None})
        expect(p.returncode == 0 and json.loads(p.stdout)["keys"] == 1,
               "-s: %d %s" % (p.returncode, p.stdout))
    p = e.ctl("stats", extra={"IDEM_LEASE": "soon"})
    expect(p.returncode == 1 and "IDEM_LEASE" in p.stderr,
           "a malformed IDEM_LEASE: %d %r" % (p.returncode, p.stderr))


def run_on_tty(e, args, at_ms):
    """Runs idemctl with stderr on a pseudo-terminal; returns (status,
    stdout, what the terminal got)."""
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([os.path.join(e.build, "idemctl")] + args,
                             env=e._env({"IDEM_TEST_NOW_MS": at_ms}),
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=slave,
                             cwd=e.tmp, text=True)
        os.close(slave)
        slave = None
        seen = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        out, _ = p.communicate(timeout=TIMEOUT)
        return p.returncode, out, seen.decode("utf-8", "replace")
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)


def test_progress_on_terminal(e):
    """A progress line on stderr when it is a terminal, nothing when it
    is not (a pipe, a log)."""
    for i in range(2):
        stuck_by_timeout(e, "tty-%d" % i)
    rc, out, tty = run_on_tty(e, ["resume"], T0 + 1000)
    expect(rc == 0 and "completed: 2" in out, "resume on a tty: %d %r" %
           (rc, out))
    expect("\rresume: 2 seen, 2 completed" in tty,
           "no progress line on the terminal: %r" % tty)
    rc, out, tty = run_on_tty(e, ["purge"], T0 + 2 * 86400 * 1000)
    expect(rc == 0 and "purged: 2" in out, "purge on a tty: %d %r" %
           (rc, out))
    expect("\rpurged: 2" in tty, "no purge progress on the terminal: %r" %
           tty)
    for i in range(2):
        stuck_by_timeout(e, "pipe-%d" % i)
    p = e.ctl("resume", extra={"IDEM_TEST_NOW_MS": T0 + 1000})
    expect(p.returncode == 0 and "\r" not in p.stderr,
           "stderr not a terminal: %d %r" % (p.returncode, p.stderr))
    # What stays is one log line per claim, the key by its keyhash (the
    # name the responder's log and inspect give it), never in the clear.
    lines = p.stderr.strip().split("\n")
    names = {e.ctl_json("inspect", "--json", "acct_alice", k)["keyhash"]
             for k in ("pipe-0", "pipe-1")}
    got = set()
    for line in lines:
        m = re.match(r"^idemctl: resume: scope=acct_alice key=([0-9a-f]+) "
                     r"attempts=2 outcome=completed$", line)
        expect(m is not None, "log line %r" % line)
        got.add(m.group(1))
    expect(got == names, "logged %s, inspect names %s" % (got, names))


def test_systemd_units(e):
    """The units in etc/systemd, placeholders substituted as an installer
    would, pass systemd-analyze verify without a word."""
    exe = shutil.which("systemd-analyze")
    expect(exe is not None, "systemd-analyze is missing (Debian package "
           "systemd, in quickstart's CHECK_PACKAGES)")
    src = os.path.join(REPO, "etc", "systemd")
    names = sorted(f for f in os.listdir(src)
                   if f.endswith((".service", ".socket", ".timer")))
    for want in ("idem-resume.service", "idem-resume.timer",
                 "idem-purge.service", "idem-purge.timer"):
        expect(want in names, "etc/systemd/%s is missing" % want)
    out = os.path.join(e.tmp, "units")
    os.mkdir(out)
    subst = {"@SBINDIR@": e.build, "@BINDIR@": e.build, "@WORKERS@": "4", "@WEBUSER@": "www-data"}
    for n in names:
        with open(os.path.join(src, n)) as f:
            text = f.read()
        for k, v in subst.items():
            text = text.replace(k, v)
        left = re.findall(r"@[A-Z_]+@", "\n".join(
            l for l in text.split("\n") if not l.startswith("#")))
        expect(not left, "%s: placeholders other than %s: %s" %
               (n, ", ".join(subst), left))
        with open(os.path.join(out, n), "w") as f:
            f.write(text)
    for n in names:
        if n.startswith(("idem-resume", "idem-purge")) and \
                n.endswith(".service"):
            with open(os.path.join(out, n)) as f:
                text = f.read()
            for line in ("Type=oneshot", "EnvironmentFile=/etc/idem/idem.env",
                         "NoNewPrivileges=yes", "ProtectSystem=strict",
                         "ProtectHome=yes", "PrivateTmp=yes"):
                expect(line in text.split("\n"), "%s lacks %s" % (n, line))
    # --man=no: Documentation=man:... would run man(1), absent in CI.
    p = subprocess.run([exe, "verify", "--man=no"] +
                       ["./" + n for n in names], cwd=out,
                       capture_output=True, text=True, timeout=TIMEOUT)
    expect(p.returncode == 0 and p.stderr.strip() == "" and
           p.stdout.strip() == "", "systemd-analyze verify: %d %s%s" %
           (p.returncode, p.stdout, p.stderr))


TESTS = [test_timeout_resumed, test_refund_resumed, test_sealed_resumed,
         test_lease_respected, test_stage0_released,
         test_two_resumers, test_provider_down_left, test_decline_stored,
         test_signal_stops, test_batch_limit, test_cli,
         test_progress_on_terminal, test_systemd_units]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--store", choices=("lmdb", "pg"), default="lmdb")
    ap.add_argument("--suite", default=None)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("tests", nargs="*")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    suite = args.suite or ("completer" if args.store == "lmdb"
                           else "completer-pg")
    results = Results()
    server = None
    if args.store == "pg":
        if not pg.available():
            results.add(False, "FAIL - PostgreSQL server: not installed")
            return results.summary(suite)
        server = pg.Postgres().start()
    chosen = [t for t in TESTS if not args.tests or
              t.__name__[5:] in args.tests]
    # The units do not depend on the store: checked once, with LMDB.
    if server is not None:
        chosen = [t for t in chosen if t is not test_systemd_units]
    try:
        for t in chosen:
            name = t.__name__[5:]
            e = None
            try:
                e = Env(build, server, name, args.verbose)
                t(e)
                results.ok(name)
            except Fail as f:
                results.fail(name, f)
            except Exception as x:  # a bug in the test: report, go on
                results.fail(name, "%s: %s" % (type(x).__name__, x))
            finally:
                if e is not None:
                    e.close()
    finally:
        if server is not None:
            server.stop()
    return results.summary(suite)


if __name__ == "__main__":
    sys.exit(main())
