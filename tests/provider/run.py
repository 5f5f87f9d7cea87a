#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CGI tests of idem-provider, the payment provider service.

Runs BUILD_DIR/idem-provider as a plain CGI child, one process per request
(RFC 3875: the environment set, the body on standard input), against a
fresh store per test, and checks its answers: the lifecycle of a charge
and a refund under their Idempotency-Key (original answer on a retry, 422
for another body, one charge for two requests at once, the first held at
a fault point on a fifo before its write), the failure modes, /stats and the input it refuses.

    python3 tests/provider/run.py --build BUILD_DIR [--suite NAME] [test ...]

One line per test, "ok - NAME" or "FAIL - NAME: why", then "SUITE: N
passed, M failed" (SUITE "provider" unless --suite says otherwise); the
exit status is 0 iff nothing failed.  Python 3 standard library only.
"""

import argparse
import errno
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

CH = re.compile(r"ch_[0-9a-f]{24}")
BODY = b'{"amount":1000,"currency":"EUR"}'


class Check(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise Check(why)


class Answer:
    def __init__(self, proc_out, rc, err):
        self.rc = rc
        self.err = err
        self.raw = proc_out
        self.status = None
        self.headers = {}
        self.body = b""
        if not proc_out:
            return
        head, _, self.body = proc_out.partition(b"\r\n\r\n")
        for line in head.decode("latin-1").split("\r\n"):
            k, _, v = line.partition(":")
            self.headers[k.strip().lower()] = v.strip()
        self.status = int(self.headers.get("status", "0").split()[0])

    def json(self):
        return json.loads(self.body)

    def brief(self):
        return f"{self.status} {self.body[:160]!r} (rc {self.rc}, {self.err[-200:]!r})"


class Service:
    """A fresh store directory and the CGI invocations on it."""

    def __init__(self, build, tmp):
        self.exe = os.path.join(build, "idem-provider")
        self.db = os.path.join(tmp, "db")
        self.tmp = tmp

    def run(self, method, path, body=b"", key=None, env=None, length=None):
        e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
             "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.1",
             "REQUEST_METHOD": method, "REQUEST_URI": path,
             "SCRIPT_NAME": "", "PATH_INFO": path,
             "IDEM_PROVIDER_DB": self.db,
             "CONTENT_LENGTH": str(len(body) if length is None else length)}
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"):
            if k in os.environ:
                e[k] = os.environ[k]
        if body:
            e["CONTENT_TYPE"] = "application/json"
        if key is not None:
            e["HTTP_IDEMPOTENCY_KEY"] = key
        e.update(env or {})
        p = subprocess.run([self.exe], input=body, capture_output=True,
                           env=e, timeout=60)
        err = p.stderr.decode(errors="replace")
        expect("Sanitizer" not in err and "runtime error" not in err,
               f"sanitizer report: {err[-400:]}")
        return Answer(p.stdout, p.returncode, err)

    def popen(self, method, path, body, key, env):
        out = {}

        def go():
            out["a"] = self.run(method, path, body, key, env)
        th = threading.Thread(target=go, daemon=True)
        th.start()
        return th, out

    def stats(self):
        a = self.run("GET", "/stats")
        expect(a.status == 200, f"GET /stats: {a.brief()}")
        return a.json()


def charge(svc, key, body=BODY, env=None):
    return svc.run("POST", "/charges", body, key, env)


# ---------------------------------------------------------------- tests

def t_charge_replay(svc):
    a = charge(svc, "charge:acct:k1:1")
    expect(a.status == 201, f"first charge: {a.brief()}")
    j = a.json()
    expect(j["status"] == "charged" and CH.fullmatch(j["id"]) and
           j["amount"] == 1000 and j["currency"] == "EUR", f"body {j}")
    expect("idempotent-replayed" not in a.headers, "first answer marked replayed")
    # The same request, members in another order: the canonical form.
    b = charge(svc, "charge:acct:k1:1", b'{ "currency": "EUR", "amount": 1000 }')
    expect(b.status == 201 and b.body == a.body, f"retry: {b.brief()}")
    expect(b.headers.get("idempotent-replayed") == "true", "retry not marked replayed")
    expect(svc.stats() == {"charges": 1, "declines": 0, "refunds": 0},
           f"stats {svc.stats()}")


def t_long_key(svc):
    # The longest key idem derives: its client's 255 characters, spaces
    # included, after the prefix and a 64-character account, before the
    # fingerprint's 32 hex digits and a 20-digit generation.
    key = ("charge:" + "a" * 64 + ":" + "x y " * 63 + "xyz:" + "f" * 32 +
           ":" + "9" * 20)
    a = charge(svc, key)
    expect(a.status == 201, f"long key: {a.brief()}")
    b = charge(svc, key)
    expect(b.status == 201 and b.body == a.body, f"retry: {b.brief()}")
    c = charge(svc, "k" * 400)
    expect(c.status == 201, f"400 characters: {c.brief()}")


def t_key_reused(svc):
    a = charge(svc, "k2")
    expect(a.status == 201, a.brief())
    b = charge(svc, "k2", b'{"amount":1001,"currency":"EUR"}')
    expect(b.status == 422 and b.json()["status"] == "key_reused", b.brief())
    c = svc.run("POST", "/refunds", BODY, "k2")
    expect(c.status == 201 and c.json()["status"] == "refunded" and
           c.json()["id"].startswith("rf_"),
           f"a refund's key space is its own: {c.brief()}")
    expect(svc.stats() == {"charges": 1, "declines": 0, "refunds": 1},
           f"stats {svc.stats()}")


def t_concurrent_duplicate(svc):
    fifo = os.path.join(svc.tmp, "gate")
    os.mkfifo(fifo, 0o600)
    th, out = svc.popen("POST", "/charges", BODY, "k3",
                        {"IDEM_FAULT": f"provider_work:wait={fifo}"})
    # Opening the fifo for writing succeeds once the first request holds
    # it open for reading, that is, once it has decided its charge and
    # not yet written it: the claim, the row and the answer are one write.
    fd, end = None, time.monotonic() + 30
    while fd is None and time.monotonic() < end and th.is_alive():
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
            time.sleep(0.01)
    expect(fd is not None, "the first request never reached provider_work")
    try:
        # No claim in progress to wait for: the duplicate's own write
        # takes the key, and its charge is the key's.
        b = charge(svc, "k3")
        expect(b.status == 201 and "idempotent-replayed" not in b.headers,
               f"duplicate while the first runs: {b.brief()}")
    finally:
        os.close(fd)
    th.join(60)
    a = out.get("a")
    # The first request's write finds the key taken: it answers the
    # duplicate's charge, as a replay, and makes none of its own.
    expect(a is not None and a.status == 201 and a.body == b.body and
           "idempotent-replayed" in a.headers, f"first: {a and a.brief()}")
    c = charge(svc, "k3")
    expect(c.status == 201 and c.body == b.body, f"after: {c.brief()}")
    expect(svc.stats()["charges"] == 1, f"stats {svc.stats()}")


def t_decline(svc):
    env = {"IDEM_PROVIDER_FAIL": "decline"}
    a = charge(svc, "k4", env=env)
    expect(a.status == 402 and a.json()["status"] == "declined" and
           re.fullmatch(r"dc_[0-9a-f]{24}", a.json()["id"]), a.brief())
    # Final: the decline is the answer under its key in every mode.
    b = charge(svc, "k4")
    expect(b.status == 402 and b.body == a.body, f"retry: {b.brief()}")
    r = svc.run("POST", "/refunds", BODY, "k5", env)
    expect(r.status == 201, f"decline mode refunds: {r.brief()}")
    expect(svc.stats() == {"charges": 0, "declines": 1, "refunds": 1},
           f"stats {svc.stats()}")


def t_unavailable(svc):
    env = {"IDEM_PROVIDER_FAIL": "unavailable"}
    a = charge(svc, "k6", env=env)
    expect(a.status == 503 and a.json()["status"] == "unavailable", a.brief())
    b = svc.run("POST", "/refunds", BODY, "k6", env)
    expect(b.status == 503, b.brief())
    expect(svc.stats() == {"charges": 0, "declines": 0, "refunds": 0},
           f"stats {svc.stats()}")
    c = charge(svc, "k6")
    expect(c.status == 201 and "idempotent-replayed" not in c.headers,
           f"once available, a fresh charge: {c.brief()}")


def t_write_fails(svc):
    # The charge's one write (claim, ledger row, answer) fails to commit:
    # 503, nothing charged, the key free for the retry.
    for n, fault in enumerate(("store_complete:fail", "batch_commit:fail")):
        key = "k9-" + fault.split(":")[0]
        a = charge(svc, key, env={"IDEM_FAULT": fault})
        expect(a.status == 503 and a.json()["status"] == "unavailable",
               f"{fault}: {a.brief()}")
        expect(svc.stats()["charges"] == n, f"{fault}: stats {svc.stats()}")
        b = charge(svc, key)
        expect(b.status == 201 and "idempotent-replayed" not in b.headers,
               f"{fault}: the retry charges afresh: {b.brief()}")
    expect(svc.stats()["charges"] == 2, f"stats {svc.stats()}")


def t_drop(svc):
    a = charge(svc, "k7", env={"IDEM_PROVIDER_FAIL": "drop"})
    expect(a.status is None and a.raw == b"" and a.rc == 0,
           f"dropped answer: {a.brief()}")
    expect(svc.stats()["charges"] == 1, f"stats {svc.stats()}")
    # Only new work's answer is lost: the retry gets the charge.
    b = charge(svc, "k7", env={"IDEM_PROVIDER_FAIL": "drop"})
    expect(b.status == 201 and CH.fullmatch(b.json()["id"]) and
           b.headers.get("idempotent-replayed") == "true", b.brief())
    expect(svc.stats()["charges"] == 1, f"stats {svc.stats()}")


def t_timeout(svc):
    env = {"IDEM_PROVIDER_FAIL": "timeout", "IDEM_PROVIDER_HOLD_MS": "300"}
    t0 = time.monotonic()
    a = charge(svc, "k8", env=env)
    took = time.monotonic() - t0
    expect(a.status == 201, a.brief())
    expect(took >= 0.3, f"answered after {took:.3f} s, held 300 ms")
    t0 = time.monotonic()
    b = charge(svc, "k8", env=env)
    expect(b.status == 201 and b.body == a.body, b.brief())
    expect(svc.stats()["charges"] == 1, f"stats {svc.stats()}")


def t_refused_input(svc):
    cases = [
        ("no key", BODY, None, 400),
        ("empty key", BODY, "", 400),
        ("key starting with a space", BODY, " ab", 400),
        ("key with a control character", BODY, "a\tb", 400),
        ("key too long", BODY, "k" * 401, 400),
        ("not JSON", b"amount=1", "k", 400),
        ("array", b"[1]", "k", 400),
        ("extra member", b'{"amount":1,"currency":"EUR","x":1}', "k", 400),
        ("zero", b'{"amount":0,"currency":"EUR"}', "k", 400),
        ("negative", b'{"amount":-5,"currency":"EUR"}', "k", 400),
        ("fraction", b'{"amount":1.5,"currency":"EUR"}', "k", 400),
        ("exponent", b'{"amount":1e3,"currency":"EUR"}', "k", 400),
        ("too many digits", b'{"amount":1234567890123456789,"currency":"EUR"}',
         "k", 400),
        ("string amount", b'{"amount":"1","currency":"EUR"}', "k", 400),
        ("lower-case currency", b'{"amount":1,"currency":"eur"}', "k", 400),
        ("empty currency", b'{"amount":1,"currency":""}', "k", 400),
        ("duplicate member", b'{"amount":1,"amount":2,"currency":"EUR"}', "k", 400),
    ]
    for name, body, key, want in cases:
        a = charge(svc, key, body)
        expect(a.status == want, f"{name}: {a.brief()}")
    big = svc.run("POST", "/charges", b"", "k", length=4097)
    expect(big.status == 413, f"body over 4096 bytes: {big.brief()}")
    expect(svc.run("GET", "/charges").status == 405, "GET /charges")
    expect(svc.run("POST", "/stats", BODY, "k").status == 405, "POST /stats")
    expect(svc.run("GET", "/nothing").status == 404, "GET /nothing")
    expect(svc.stats() == {"charges": 0, "declines": 0, "refunds": 0},
           f"stats {svc.stats()}")


def t_bad_config(svc):
    a = charge(svc, "k9", env={"IDEM_PROVIDER_FAIL": "sometimes"})
    expect(a.rc != 0 and a.status is None and "IDEM_PROVIDER_FAIL" in a.err,
           f"unknown mode: {a.brief()}")
    b = charge(svc, "k9", env={"IDEM_PROVIDER_LATENCY_MS": "-1"})
    expect(b.rc != 0 and "IDEM_PROVIDER_LATENCY_MS" in b.err, b.brief())


def t_charge_after_expiry(svc):
    # A key answers its charge for a week; a charge under it after that
    # is a second charge, with an id of its own, and /stats counts both
    # (one ledger row per charge, not per key).
    t0 = 1_800_000_000_000
    week = 7 * 24 * 3600 * 1000
    a = charge(svc, "k-old", env={"IDEM_TEST_NOW_MS": str(t0)})
    expect(a.status == 201, f"first charge: {a.brief()}")
    b = charge(svc, "k-old", env={"IDEM_TEST_NOW_MS": str(t0 + week - 1)})
    expect(b.status == 201 and b.body == a.body and
           b.headers.get("idempotent-replayed") == "true",
           f"within the week: {b.brief()}")
    c = charge(svc, "k-old", env={"IDEM_TEST_NOW_MS": str(t0 + week + 1)})
    expect(c.status == 201 and "idempotent-replayed" not in c.headers,
           f"after the week: {c.brief()}")
    expect(c.json()["id"] != a.json()["id"], "the second charge has the first's id")
    expect(svc.stats() == {"charges": 2, "declines": 0, "refunds": 0},
           f"stats {svc.stats()}: the second charge is not counted")


TESTS = [
    ("a charge, and its retry answered with the original", t_charge_replay),
    ("same key, another body -> 422; refunds keyed apart", t_key_reused),
    ("the longest derived key, with spaces", t_long_key),
    ("two at once on one key -> one charge, both answer it", t_concurrent_duplicate),
    ("decline mode: 402, final under its key; refunds still made", t_decline),
    ("unavailable mode: 503 before anything, nothing recorded", t_unavailable),
    ("a charge whose write fails: 503, nothing charged", t_write_fails),
    ("drop mode: charged, no answer; the retry gets the charge", t_drop),
    ("timeout mode: charged, answered late; the retry gets the charge", t_timeout),
    ("invalid requests refused, nothing recorded", t_refused_input),
    ("invalid configuration stops the service", t_bad_config),
    ("a charge under a key past its week is a second charge, counted",
     t_charge_after_expiry),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--suite", default="provider")
    ap.add_argument("tests", nargs="*")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    passed = failed = 0
    for name, fn in TESTS:
        if args.tests and fn.__name__[2:] not in args.tests:
            continue
        tmp = tempfile.mkdtemp(prefix="idem-provider-")
        try:
            fn(Service(build, tmp))
        except Check as e:
            print(f"FAIL - {name}: {e}", flush=True)
            failed += 1
        except Exception as e:          # noqa: BLE001 - every error is a FAIL
            print(f"FAIL - {name}: {type(e).__name__}: {e}", flush=True)
            failed += 1
        else:
            print(f"ok - {name}", flush=True)
            passed += 1
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{args.suite}: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
