#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Live tests: idem-fcgi behind real web servers, over real sockets.

    python3 tests/live/run.py --build BUILD_DIR [--server lighttpd|lighttpd-spawn|apache|nginx ...]

For each server: a fresh temp directory (state, keys, rendered configs from etc/,
a copy of the binaries and of www/), a free loopback port, >= 4 workers; start,
wait for GET /healthz, run the tests, stop everything (also on failure), remove the
temp directory.  Output: "ok - server: test" / "FAIL - server: test: why" lines, the
duplicate-split lines, and the closing "live: N passed, M failed" (exit 0 iff M == 0).

Python 3 standard library only.  Only 127.0.0.1 is used.
"""

import argparse
import atexit
import base64
import concurrent.futures
import errno
import http.client
import json
import os
import re
import secrets
import select
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib.common import (DEADLINE, HOST, SANITIZER_MARKS, Results,  # noqa: E402
                        become_subreaper, note, proc_alive, proc_state,
                        wait_exited)
from lib.servers import (CLASSES, INSTANCES, Apache, Lighttpd,  # noqa: E402
                         Nginx, cleanup_all)
from lib.web import Reply, http_request  # noqa: E402

SERVERS = ("lighttpd", "lighttpd-spawn", "apache", "nginx")
SRCDIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BODY = b'{"amount": 100.00, "currency": "BRL"}'
OTHER_BODY = b'{"amount": 250.00, "currency": "BRL"}'
RESULTS = Results()


# ---------------------------------------------------------------- HTTP

def basic_auth(user, password):
    tok = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {tok}"}


def pay_headers(secret=None, key=None, user=None, ctype="application/json"):
    h = {}
    if ctype:
        h["Content-Type"] = ctype
    if secret is not None:
        h["Authorization"] = f"Bearer {secret}"
    if user is not None:
        tok = base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()
        h["Authorization"] = f"Basic {tok}"
    if key is not None:
        h["Idempotency-Key"] = f'"{key}"'
    return h


def new_key(tag):
    return f"live-{tag}-{secrets.token_hex(8)}"


# ---------------------------------------------------------------- instances



# ---------------------------------------------------------------- tests

class Check(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise Check(why)


def is_problem(r):
    return (r.header("Content-Type") or "").startswith("application/problem+json")


def test_contract(inst, t):
    port, sec = inst.port, inst.secrets["acct_alpha"]
    key = new_key("contract")
    state = {}

    def created():
        r = http_request(port, "POST", "/payments", BODY, pay_headers(sec, key))
        expect(r.status == 201, f"expected 201, got {r.brief()}")
        loc = r.header("Location") or ""
        expect(re.fullmatch(r"/payments/pay_[0-9a-f]+", loc), f"Location {loc!r}")
        expect((r.header("Content-Type") or "").startswith("application/json"),
               f"Content-Type {r.header('Content-Type')!r}")
        expect((r.header("Idempotent-Replayed") or "").lower() != "true",
               "first answer says Idempotent-Replayed")
        doc = r.json()
        for f in ("id", "amount", "currency", "status", "created_at"):
            expect(f in doc, f"body lacks {f!r}: {r.body[:200]!r}")
        expect(loc.endswith("/" + str(doc["id"])), f"Location {loc} vs id {doc['id']}")
        state["first"] = r
    t("POST creates (201, Location, JSON)", created)

    def replayed():
        expect("first" in state, "no first answer")
        r = http_request(port, "POST", "/payments", BODY, pay_headers(sec, key))
        f = state["first"]
        expect(r.status == 201, f"retry: expected 201, got {r.brief()}")
        expect(r.body == f.body, f"retry body differs: {r.body[:120]!r} vs {f.body[:120]!r}")
        expect(r.header("Location") == f.header("Location"),
               f"Location {r.header('Location')!r} vs {f.header('Location')!r}")
        expect(r.header("Content-Type") == f.header("Content-Type"), "Content-Type differs")
        expect((r.header("Idempotent-Replayed") or "").lower() == "true",
               f"Idempotent-Replayed: {r.header('Idempotent-Replayed')!r}")
    t("retry replayed (same bytes, Location, Idempotent-Replayed: true)", replayed)

    def get_location():
        expect("first" in state, "no first answer")
        loc = state["first"].header("Location")
        r = http_request(port, "GET", loc, None, pay_headers(sec, ctype=None))
        expect(r.status == 200, f"GET {loc}: {r.brief()}")
        expect(state["first"].json()["id"] in r.body.decode("utf-8", "replace"),
               f"GET {loc} body lacks the id: {r.body[:200]!r}")
    t("GET Location (path below /payments routed)", get_location)

    def mismatch():
        r = http_request(port, "POST", "/payments", OTHER_BODY, pay_headers(sec, key))
        expect(r.status == 422, f"expected 422, got {r.brief()}")
        expect(is_problem(r), f"not problem+json: {r.brief()}")
    t("same key, other body -> 422", mismatch)

    def missing_key():
        r = http_request(port, "POST", "/payments", BODY, pay_headers(sec))
        expect(r.status == 400, f"expected 400, got {r.brief()}")
        expect(is_problem(r), f"not problem+json: {r.brief()}")
        state["problem"] = r
    t("missing key -> 400", missing_key)

    def problem_page():
        expect("problem" in state, "no 400 answer")
        typ = state["problem"].json().get("type", "")
        path = re.sub(r"^https?://[^/]+", "", typ)
        expect(path.startswith("/"), f"type {typ!r} is not a path on this server")
        r = http_request(port, "GET", path)
        expect(r.status == 200, f"GET {path}: {r.status}")
        expect((r.header("Content-Type") or "").startswith("text/html"),
               f"GET {path}: Content-Type {r.header('Content-Type')!r}")
    t("problem type page served from www/", problem_page)

    def description():
        r = http_request(port, "GET", "/openapi.json")
        expect(r.status == 200, f"GET /openapi.json: {r.brief()}")
        ctype = (r.header("Content-Type") or "").split(";")[0].strip()
        expect(ctype == "application/json", f"Content-Type {r.header('Content-Type')!r}")
        with open(os.path.join(SRCDIR, "www", "openapi.json"), "rb") as f:
            expect(r.body == f.read(), "not the bytes of www/openapi.json")
        expect(r.json().get("openapi", "").startswith("3.1."), "not OpenAPI 3.1")
    t("/openapi.json served as JSON from www/", description)

    def no_creds():
        r = http_request(port, "POST", "/payments", BODY, pay_headers(None, new_key("nocred")))
        expect(r.status == 401, f"expected 401, got {r.brief()}")
        expect(r.header("WWW-Authenticate"), "401 without WWW-Authenticate")
        expect(is_problem(r), f"not problem+json: {r.brief()}")
        r = http_request(port, "POST", "/payments", BODY,
                         pay_headers("sk_live_wrong" + secrets.token_hex(8), new_key("badcred")))
        expect(r.status == 401, f"wrong secret: expected 401, got {r.brief()}")
    t("no / wrong credentials -> 401", no_creds)

    def too_large():
        pad = b"x" * (70 * 1024)
        body = b'{"amount": 100.00, "currency": "BRL", "pad": "' + pad + b'"}'
        r = http_request(port, "POST", "/payments", body, pay_headers(sec, new_key("big")))
        expect(r.status == 413, f"expected 413, got {r.brief()}")
        expect(is_problem(r), f"not problem+json (did the web server answer?): {r.brief()}")
    t("body over the limit -> 413", too_large)

    def isolation():
        k = new_key("scope")
        a = http_request(port, "POST", "/payments", BODY, pay_headers(sec, k))
        b = http_request(port, "POST", "/payments", BODY,
                         pay_headers(inst.secrets["acct_beta"], k))
        expect(a.status == 201 and b.status == 201, f"{a.brief()} / {b.brief()}")
        expect((b.header("Idempotent-Replayed") or "").lower() != "true",
               "second account got a replay of the first's payment")
        expect(a.header("Location") != b.header("Location"), "same payment in two scopes")
    t("same key in two accounts -> two payments", isolation)

    test_metrics(t, port, "", pay_headers(inst.secrets["metrics"], ctype=None),
                 pay_headers(sec, ctype=None),
                 basic_auth("metrics", "wrong-password"))
    test_refused(inst, t, port, None, "", "acct_alpha")


def expect_problem(r, slug, status, what):
    expect(r.status == status, f"{what}: expected {status}, got {r.brief()}")
    expect(is_problem(r), f"{what}: not problem+json (did the web server answer "
           f"with its own page?): {r.brief()}")
    doc = r.json()
    expect(doc.get("type") == f"/problems/{slug}.html" and doc.get("status") == status,
           f"{what}: expected type /problems/{slug}.html, got {doc!r}")


def test_metrics(t, port, label, monitor, customer, wrong):
    """/metrics answers only the monitoring account: 401 without credentials
    or with bad ones, 403 for a customer, 200 for the monitoring account,
    which in turn may not pay."""
    def run():
        r = http_request(port, "GET", "/metrics")
        expect_problem(r, "unauthorized", 401, "no credentials")
        expect(r.header("WWW-Authenticate"), "401 without WWW-Authenticate")
        expect(b"# TYPE" not in r.body, "401 carries the metrics")
        r = http_request(port, "GET", "/metrics", None, wrong)
        expect_problem(r, "unauthorized", 401, "metrics:wrong-password")
        r = http_request(port, "GET", "/metrics", None, customer)
        expect_problem(r, "forbidden", 403, "customer account")
        expect(b"# TYPE" not in r.body, "403 carries the metrics")
        r = http_request(port, "GET", "/metrics", None, monitor)
        expect(r.status == 200, f"monitoring account: {r.brief()}")
        expect((r.header("Content-Type") or "").startswith("text/plain"),
               f"Content-Type {r.header('Content-Type')!r}")
        expect(b"# TYPE" in r.body, f"no '# TYPE' line: {r.body[:200]!r}")
        r = http_request(port, "POST", "/payments", BODY,
                         dict(monitor, **{"Content-Type": "application/json",
                                          "Idempotency-Key": f'"{new_key("mon")}"'}))
        expect_problem(r, "forbidden", 403, "monitoring account on POST /payments")
    t(f"{label}GET /metrics: 401 anonymous / wrong password, 403 customer, "
      "200 monitoring account (403 on /payments)", run)


def test_refused(inst, t, port, state, label, account):
    """Basic credentials with a wrong password, and no credentials at all:
    POST and GET /payments are 401 (the unauthorized problem), and nothing is
    stored or charged.  The Basic case is how nginx's $remote_user, passed as
    REMOTE_USER, let anyone act as any account."""
    cases = ((f"Basic {account}:wrong-password", basic_auth(account, "wrong-password")),
             ("no credentials", {}))
    for name, creds in cases:
        def run(creds=creds):
            before = inst.stats(state)
            post = http_request(port, "POST", "/payments", BODY,
                                dict(creds, **{"Content-Type": "application/json",
                                               "Idempotency-Key": f'"{new_key("refused")}"'}))
            get = http_request(port, "GET", "/payments", None, creds)
            for what, r in (("POST /payments", post), ("GET /payments", get)):
                expect_problem(r, "unauthorized", 401, what)
                expect(r.header("WWW-Authenticate"), f"{what}: 401 without WWW-Authenticate")
                expect(b"pay_" not in r.body, f"{what}: 401 names a payment: {r.brief()}")
            after = inst.stats(state)
            for k in ("keys", "payments", "charges"):
                expect(after.get(k) == before.get(k),
                       f"{k}: {before.get(k)} before, {after.get(k)} after")
        t(f"{label}{name} -> 401 unauthorized on POST and GET /payments, "
          "nothing stored or charged", run)


def test_duplicates(inst, t, n=50):
    def run():
        port, sec = inst.port, inst.secrets["acct_alpha"]
        key = new_key("dup")
        before = inst.stats()
        barrier = threading.Barrier(n, timeout=DEADLINE.timeout(20))
        answers = [None] * n

        def one(i):
            conn = http.client.HTTPConnection(HOST, port, timeout=DEADLINE.timeout(30))
            try:
                conn.connect()
                barrier.wait()
                answers[i] = http_request(port, "POST", "/payments", BODY,
                                          pay_headers(sec, key), conn=conn)
            except Exception as e:      # noqa: BLE001 - reported below
                answers[i] = e
        threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(DEADLINE.timeout(60))
        workers = len(inst.worker_pids())
        after = inst.stats()
        charges = after["charges"] - before["charges"]
        payments = after["payments"] - before["payments"]
        errors = [a for a in answers if not isinstance(a, Reply)]
        created = [a for a in answers if isinstance(a, Reply) and a.status == 201
                   and (a.header("Idempotent-Replayed") or "").lower() != "true"]
        replayed = [a for a in answers if isinstance(a, Reply) and a.status == 201
                    and (a.header("Idempotent-Replayed") or "").lower() == "true"]
        conflict = [a for a in answers if isinstance(a, Reply) and a.status == 409]
        other = [a for a in answers if isinstance(a, Reply) and a.status not in (201, 409)]
        print(f"{inst.name}: {n} duplicates -> {len(created)} created, {len(replayed)} replayed, "
              f"{len(conflict)} conflict (409), {len(other)} other, {len(errors)} errors, "
              f"charges={charges} (workers alive: {workers})", flush=True)
        expect(not errors, f"transport errors: {errors[:3]!r}")
        expect(not other, f"unexpected answers: {[a.brief() for a in other[:3]]}")
        expect(charges == 1, f"provider charged {charges} times")
        expect(payments == 1, f"{payments} payments stored")
        expect(len(created) == 1, f"{len(created)} answers were not replays")
        first = created[0]
        for a in replayed:
            expect(a.body == first.body and a.header("Location") == first.header("Location"),
                   f"replay differs: {a.body[:120]!r} vs {first.body[:120]!r}")
        for a in conflict:
            ra = a.header("Retry-After") or ""
            expect(ra.isdigit() and int(ra) >= 1, f"409 with Retry-After {ra!r}")
            expect(is_problem(a), f"409 not problem+json: {a.brief()}")
    t(f"{n} concurrent duplicates -> one charge", run)


def test_refunds(inst, t, n=10):
    """Refunds never exceed the payment under concurrency: n refunds of
    30.00 on a 100.00 payment, each under its own key, all at once through
    the web server: exactly 3 succeed, the others get the stored 400."""
    def run():
        port, sec = inst.port, inst.secrets["acct_alpha"]
        r = http_request(port, "POST", "/payments", BODY,
                         pay_headers(sec, new_key("refunded")))
        expect(r.status == 201, f"payment: {r.brief()}")
        pay = r.header("Location")
        before = inst.stats()
        barrier = threading.Barrier(n, timeout=DEADLINE.timeout(20))
        answers = [None] * n
        keys = [new_key(f"refund{i}") for i in range(n)]

        def one(i):
            conn = http.client.HTTPConnection(HOST, port, timeout=DEADLINE.timeout(30))
            try:
                conn.connect()
                barrier.wait()
                answers[i] = http_request(port, "POST", pay + "/refunds",
                                          b'{"amount": 30.00}',
                                          pay_headers(sec, keys[i]), conn=conn)
            except Exception as e:      # noqa: BLE001 - reported below
                answers[i] = e
        threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(DEADLINE.timeout(60))
        after = inst.stats()
        errors = [a for a in answers if not isinstance(a, Reply)]
        made = [a for a in answers if isinstance(a, Reply) and a.status == 201]
        over = [a for a in answers if isinstance(a, Reply) and a.status == 400
                and b"refund-exceeds-payment" in a.body]
        provider = after["provider_refunds"] - before["provider_refunds"]
        print(f"{inst.name}: {n} concurrent refunds of 30.00 on 100.00 -> "
              f"{len(made)} refunded, {len(over)} exceed, provider refunds {provider}",
              flush=True)
        expect(not errors, f"transport errors: {errors[:3]!r}")
        expect(len(made) == 3, f"{len(made)} refunds made, expected 3: "
               f"{[a.brief() for a in answers if isinstance(a, Reply)][:4]}")
        expect(len(over) == n - 3, f"{len(over)} refund-exceeds-payment answers")
        expect(provider == 3, f"{provider} provider refunds, expected 3")
        g = http_request(port, "GET", pay, None, pay_headers(sec, ctype=None))
        expect(g.status == 200, f"GET {pay}: {g.brief()}")
        expect(b'"amount_refunded":90.00' in g.body,
               f"GET {pay}: amount_refunded not 90.00: {g.body[:240]!r}")
        # a retry of a refused refund is the stored 400, byte for byte
        i = answers.index(over[0])
        again = http_request(port, "POST", pay + "/refunds", b'{"amount": 30.00}',
                             pay_headers(sec, keys[i]))
        expect(again.status == 400 and again.body == over[0].body and
               (again.header("Idempotent-Replayed") or "").lower() == "true",
               f"retry of a refused refund: {again.brief()}")
    t(f"{n} concurrent refunds of 30.00 on 100.00 -> 3 refunded, total 90.00", run)


def test_distinct(inst, t, n=200, threads=20):
    def run():
        port, sec = inst.port, inst.secrets["acct_beta"]
        before = inst.stats()
        keys = [new_key(f"many{i}") for i in range(n)]

        def one(k):
            try:
                return http_request(port, "POST", "/payments", BODY, pay_headers(sec, k))
            except Exception as e:      # noqa: BLE001
                return e
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            answers = list(pool.map(one, keys, timeout=DEADLINE.timeout(120)))
        after = inst.stats()
        charges = after["charges"] - before["charges"]
        payments = after["payments"] - before["payments"]
        bad = [a if not isinstance(a, Reply) else a.brief() for a in answers
               if not isinstance(a, Reply) or a.status != 201
               or (a.header("Idempotent-Replayed") or "").lower() == "true"]
        locs = {a.header("Location") for a in answers if isinstance(a, Reply)}
        note(f"{inst.name}: {n} distinct keys -> {n - len(bad)} created, charges={charges}, "
             f"payments={payments}")
        expect(not bad, f"{len(bad)} not fresh 201: {bad[:3]}")
        expect(len(locs) == n, f"{len(locs)} distinct Locations for {n} keys")
        expect(charges == n, f"charges {charges}, expected {n}")
        expect(payments == n, f"payments {payments}, expected {n}")
    t(f"{n} distinct keys concurrently -> {n} charges, none lost", run)


def test_pages(inst, t, n=250, limit=100):
    """Cursor pages: an account's n payments walked with starting_after in
    pages of limit, while a writer keeps paying into the same account
    (and the walker waits, between pages, for one more of its payments):
    every payment made before the walk is in it, none twice, newest first;
    has_more until the last page.  An unknown query parameter is a 400
    that names it."""
    port, sec = inst.port, inst.secrets["acct_pages"]
    hdrs = pay_headers(sec, ctype=None)

    def page(query):
        r = http_request(port, "GET", "/payments?" + query, None, hdrs)
        expect(r.status == 200, f"GET /payments?{query}: {r.brief()}")
        doc = r.json()
        expect(isinstance(doc.get("data"), list) and
               isinstance(doc.get("has_more"), bool),
               f"GET /payments?{query}: {r.body[:200]!r}")
        return doc

    def run():
        def pay(i):
            r = http_request(port, "POST", "/payments", BODY,
                             pay_headers(sec, new_key(f"page{i}")))
            return r.json()["id"] if r.status == 201 else r.brief()
        with concurrent.futures.ThreadPoolExecutor(10) as pool:
            made = list(pool.map(pay, range(n), timeout=DEADLINE.timeout(120)))
        bad = [m for m in made if not str(m).startswith("pay_")]
        expect(not bad, f"{len(bad)} payments not made: {bad[:3]}")

        during = []
        more = threading.Condition()
        stop = threading.Event()

        def writer():
            i = 0
            while not stop.is_set():
                i += 1
                r = http_request(port, "POST", "/payments", BODY,
                                 pay_headers(sec, new_key(f"during{i}")))
                with more:
                    during.append(r.status)
                    more.notify_all()
        w = threading.Thread(target=writer, daemon=True)
        w.start()
        walked, stamps, pages, query = [], [], 0, f"limit={limit}"
        try:
            while True:
                doc = page(query)
                pages += 1
                expect(len(doc["data"]) <= limit,
                       f"page {pages}: {len(doc['data'])} items")
                walked += [p["id"] for p in doc["data"]]
                stamps += [p["created_at"] for p in doc["data"]]
                if not doc["has_more"]:
                    break
                expect(doc["data"], f"page {pages}: empty with has_more")
                expect(pages <= n // limit + 2, f"{pages} pages for {n}")
                # One more payment made before the next page is read.
                with more:
                    seen = len(during)
                    expect(more.wait_for(lambda: len(during) > seen,
                                         DEADLINE.timeout(30)),
                           "the writer made no payment")
                query = f"limit={limit}&starting_after={walked[-1]}"
        finally:
            stop.set()
            w.join(DEADLINE.timeout(30))
        note(f"{inst.name}: {n} payments walked in {pages} pages of {limit} "
             f"while {len(during)} more were made")
        expect(all(s == 201 for s in during),
               f"payments during the walk: {sorted(set(during))}")
        expect(len(walked) == len(set(walked)),
               f"{len(walked) - len(set(walked))} payments listed twice")
        expect(stamps == sorted(stamps, reverse=True), "not newest first")
        missing = set(made) - set(walked)
        expect(not missing, f"{len(missing)} payments missing from the walk")
        expect(pages >= 3, f"{pages} pages")

        r = http_request(port, "GET", "/payments?limit=5&startingafter=x",
                         None, hdrs)
        expect(r.status == 400 and is_problem(r) and
               "startingafter" in r.json().get("detail", ""),
               f"unknown parameter: {r.brief()}")
    t(f"{n} payments walked with starting_after, pages of {limit}, "
      "while more are made: no gap, no repeat", run)


def test_restart(inst, t):
    port, sec = inst.port, inst.secrets["acct_alpha"]
    key = new_key("restart")
    state = {}

    def run():
        first = http_request(port, "POST", "/payments", BODY, pay_headers(sec, key))
        expect(first.status == 201, f"first call: {first.brief()}")
        before_stats = inst.stats()
        before, clean = inst.restart_workers()
        state["clean"] = clean
        expect(before, "no worker processes found before the restart")
        if inst.server is not None:
            inst.wait_ready(port)
        r = http_request(port, "POST", "/payments", BODY, pay_headers(sec, key))
        now = inst.worker_pids()
        survivors = [p for p in before if proc_alive(p)]
        expect(not survivors, "old workers still alive: "
               f"{[proc_state(p) for p in survivors]}")
        expect(now, "no workers after the restart")
        expect(r.status == 201, f"retry after restart: {r.brief()}")
        expect((r.header("Idempotent-Replayed") or "").lower() == "true",
               "retry after restart not marked Idempotent-Replayed")
        expect(r.body == first.body, f"body differs: {r.body[:120]!r} vs {first.body[:120]!r}")
        expect(r.header("Location") == first.header("Location"), "Location differs")
        after_stats = inst.stats()
        expect(after_stats["charges"] == before_stats["charges"], "retry charged again")
        note(f"{inst.name}: workers {before} replaced by {now}")
    t("every worker restarted, retry replays the original", run)
    if state.get("clean") is not None:
        t("idle workers exit on SIGTERM",
          lambda: expect(state["clean"], "workers still alive 5 s after SIGTERM (needed SIGKILL)"))


# What the nginx sites in etc/ let one client address hold (limit_conn);
# the live suite's own bursts (50 duplicates at once) stay below it.
PER_CLIENT_CONNECTIONS = 64
# The other client, the one that must still be served: another loopback
# address, since a per-address limit rightly refuses the slow client's own
# further requests.
OTHER_CLIENT = "127.0.0.2"


def other_client(port):
    """A connection to HOST:port from OTHER_CLIENT."""
    return http.client.HTTPConnection(HOST, port, timeout=DEADLINE.timeout(5),
                                      source_address=(OTHER_CLIENT, 0))


def slow_client(port, n, interval, hold):
    """One client on 127.0.0.1 opens n connections to port, each with a
    partial request line, and sends one more byte on each every interval
    seconds for hold seconds, then closes them all.  Runs in a thread of
    its own; returns (state, thread): state counts the connections made,
    those the server closed or answered, and "ready" is set once every
    connection was tried."""
    state = {"opened": 0, "refused": 0, "cut": 0, "first_cut": None,
             "ready": threading.Event(), "stop": threading.Event()}

    def run():
        socks, started = [], time.monotonic()
        try:
            # Non-blocking connects: a server that stopped accepting leaves
            # them in its listen queue, and past that the kernel drops the
            # SYNs, which must not stall the client.
            pending = {}
            for _ in range(n):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setblocking(False)
                s.connect_ex((HOST, port))
                pending[s.fileno()] = s
            poll = select.poll()
            for fd in pending:
                poll.register(fd, select.POLLOUT)
            end = time.monotonic() + min(5.0, hold)
            while pending and time.monotonic() < end:
                for fd, ev in poll.poll(100):
                    s = pending.pop(fd)
                    poll.unregister(fd)
                    if ev & (select.POLLERR | select.POLLHUP) or \
                            s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                        state["refused"] += 1
                        s.close()
                        continue
                    try:
                        s.send(b"GET /")
                    except OSError:
                        state["refused"] += 1
                        s.close()
                        continue
                    socks.append(s)
            for s in pending.values():
                state["refused"] += 1
                s.close()
            state["opened"] = len(socks)
            state["ready"].set()
            end = started + hold
            while socks and time.monotonic() < end and \
                    not state["stop"].wait(interval):
                # Readable means the server answered (408, 403) or
                # closed: either way it let the connection go.
                poll = select.poll()
                for s in socks:
                    poll.register(s.fileno(), select.POLLIN)
                readable = {fd for fd, _ in poll.poll(0)}
                kept = []
                for s in socks:
                    gone = s.fileno() in readable
                    try:
                        if not gone:
                            s.send(b"a")
                    except OSError:
                        gone = True
                    if gone:
                        state["cut"] += 1
                        if state["first_cut"] is None:
                            state["first_cut"] = time.monotonic() - started
                        s.close()
                    else:
                        kept.append(s)
                socks = kept
        finally:
            state["ready"].set()
            for s in socks:
                s.close()
    th = threading.Thread(target=run, daemon=True)
    th.start()
    return state, th


def test_slow_clients(inst, t, n=1100, interval=2.0, hold=14.0):
    """One client holding n connections (more than the 1024 the shipped
    configurations took at once, and than PER_CLIENT_CONNECTIONS), each a
    request line that grows by a byte every interval seconds: another
    client (OTHER_CLIENT) is still served within a second, GET /healthz and POST
    /payments, all through the hold (etc/README.md, "Slow clients")."""
    def run():
        port, sec = inst.port, inst.secrets["acct_alpha"]
        state, th = slow_client(port, n, interval, hold)
        slow = []
        try:
            expect(state["ready"].wait(DEADLINE.timeout(15)),
                   "the slow client did not get going")
            end = time.monotonic() + hold - 2.0
            probes = 0
            while time.monotonic() < end:
                for method, path, body, hdrs in (
                        ("GET", "/healthz", None, None),
                        ("POST", "/payments", BODY,
                         pay_headers(sec, new_key("slowloris")))):
                    t0 = time.monotonic()
                    try:
                        r = http_request(port, method, path, body, hdrs,
                                         conn=other_client(port))
                        what = r.status
                    except (OSError, http.client.HTTPException) as e:
                        what = type(e).__name__
                    took = time.monotonic() - t0
                    probes += 1
                    if what not in (200, 201) or took > 1.0:
                        slow.append(f"{method} {path} at "
                                    f"{t0 - (end - hold + 2.0):.1f} s: "
                                    f"{what} in {took:.2f} s")
                time.sleep(0.5)
        finally:
            state["stop"].set()
            th.join(DEADLINE.timeout(30))
        first = state["first_cut"]
        note(f"{inst.name}: slow client: {state['opened']} connections open, "
             f"{state['refused']} not accepted, {state['cut']} let go by the "
             f"server (first at {first if first is None else round(first, 1)}"
             f" s); {probes} probes, {len(slow)} slow: {slow[:4]}")
        expect(state["opened"] + state["refused"] == n, f"{state}")
        # nginx and Apache give a whole request head a deadline
        # (client_header_timeout, RequestReadTimeout): every trickled head
        # is let go well within the hold.  lighttpd bounds only the pause
        # between two reads, which a byte every interval never reaches.
        if isinstance(inst, (Apache, Nginx)):
            expect(state["cut"] == state["opened"],
                   f"{state['opened'] - state['cut']} trickled heads still "
                   f"held after {hold:.0f} s")
        expect(not slow, f"{len(slow)} of {probes} requests not served "
               f"within 1 s: {slow[:6]}")
    t(f"one client holding {n} trickling connections: others served "
      "within 1 s", run)


def test_per_client_limit(inst, t, extra=16, hold=6.0):
    """nginx's limit_conn: one client sending PER_CLIENT_CONNECTIONS +
    extra request bodies a byte at a time holds no more than
    PER_CLIENT_CONNECTIONS of them; the rest are refused at once (503,
    the service-unavailable problem), and another client is served
    meanwhile."""
    def run():
        port, sec = inst.port, inst.secrets["acct_alpha"]
        n = PER_CLIENT_CONNECTIONS + extra
        head = (f"POST /payments HTTP/1.1\r\nHost: {HOST}\r\n"
                f"Authorization: Bearer {sec}\r\n"
                "Content-Type: application/json\r\nContent-Length: 1000\r\n"
                "Connection: close\r\n").encode()
        socks, refused = [], 0
        try:
            for i in range(n):
                s = socket.create_connection((HOST, port),
                                             timeout=DEADLINE.timeout(5))
                key = new_key(f"slowbody{i}")
                s.sendall(head + f'Idempotency-Key: "{key}"\r\n\r\n{{'
                          .encode())
                socks.append(s)
            end = time.monotonic() + hold
            while time.monotonic() < end:
                poll = select.poll()
                for s in socks:
                    poll.register(s.fileno(), select.POLLIN)
                answered = {fd for fd, _ in poll.poll(500)}
                for s in [s for s in socks if s.fileno() in answered]:
                    s.settimeout(DEADLINE.timeout(5))
                    first = s.recv(64)
                    expect(first.startswith(b"HTTP/1.1 503"),
                           f"a held body was answered {first!r}")
                    refused += 1
                    socks.remove(s)
                    s.close()
                for s in socks:
                    s.send(b" ")
                if refused >= extra:
                    break
            t0 = time.monotonic()
            r = http_request(port, "GET", "/healthz", conn=other_client(port))
            took = time.monotonic() - t0
        finally:
            for s in socks:
                s.close()
        note(f"{inst.name}: {n} slow bodies from one client: {refused} "
             f"refused, {len(socks)} held; GET /healthz {r.status} in "
             f"{took:.2f} s")
        expect(refused == extra, f"{refused} refused, expected {extra}")
        expect(r.status == 200 and took <= 1.0,
               f"GET /healthz meanwhile: {r.status} in {took:.2f} s")
    t(f"one client sending {PER_CLIENT_CONNECTIONS} + {extra} slow bodies: "
      f"{extra} refused (503), others served", run)


FORGED_ID = "req_aaaaaaaaaaaaaaaaaaaaaaaa"


def worker_line(inst, rid, seconds=3.0):
    """The workers' log line (in any log under the instance's root: the
    spawn-fcgi workers' files, lighttpd's breakage log, Apache's error log)
    that names rid as its request id, or None."""
    pat = re.compile(r"^.*idem: .* rid=" + re.escape(rid) + r"$", re.M)
    end = time.monotonic() + DEADLINE.timeout(seconds)
    while True:
        for d, _dirs, files in os.walk(inst.root):
            for f in files:
                if "log" not in f:
                    continue
                try:
                    with open(os.path.join(d, f), errors="replace") as fh:
                        m = pat.search(fh.read())
                except OSError:
                    continue
                if m:
                    return m.group(0)
        if time.monotonic() >= end:
            return None
        time.sleep(0.05)


def test_request_id(inst, t):
    """A client's X-Request-Id, even one in the responder's own form, is
    never the answer's Request-Id, a problem's instance or the log line's
    rid, on every site: the request's id is the web server's own (nginx's
    $request_id, Apache's UNIQUE_ID) or one the responder makes up, and
    the client's is at most logged as client_request_id."""
    sites = [("", inst.port, pay_headers(inst.secrets["acct_alpha"]))]
    if isinstance(inst, (Apache, Nginx)):
        sites.append(("basic auth: ", inst.auth_port,
                      dict(basic_auth(*list(inst.users.items())[0]),
                           **{"Content-Type": "application/json"})))
    if isinstance(inst, Nginx):
        own = r"[0-9a-f]{32}"                   # $request_id
    elif isinstance(inst, Apache):
        own = r"[A-Za-z0-9@_-]{19,}"            # mod_unique_id
    else:
        own = r"req_[0-9a-f]{24}"               # made up by the responder
    for label, port, creds in sites:
        def run(port=port, creds=creds):
            r = http_request(port, "POST", "/payments", BODY,
                             dict(creds, **{"X-Request-Id": FORGED_ID}))
            expect_problem(r, "missing-key", 400, "POST without a key")
            rid = r.header("Request-Id") or ""
            expect(rid != FORGED_ID, "the client's X-Request-Id came back "
                   "as Request-Id")
            expect(re.fullmatch(own, rid) and rid != FORGED_ID,
                   f"Request-Id {rid!r} is not the server's own form {own}")
            inst_id = r.json().get("instance")
            expect(inst_id == rid, f"instance {inst_id!r}, Request-Id {rid!r}")
            if r.header("X-Request-Id") is not None:
                expect(r.header("X-Request-Id") == rid,
                       f"X-Request-Id {r.header('X-Request-Id')!r} is not "
                       f"the Request-Id {rid!r}")
            line = worker_line(inst, rid)
            expect(line is not None, f"no worker log line with rid={rid}")
            m = re.search(r" client_request_id=(\S+) rid=", line)
            expect(m, f"no client_request_id field: {line!r}")
            # lighttpd passes the header on; the nginx and Apache sites
            # drop it, their own id being the request's.
            want = FORGED_ID if own.startswith("req_") else "-"
            expect(m.group(1) == want,
                   f"client_request_id={m.group(1)}, expected {want}: {line!r}")
            expect(FORGED_ID not in line.replace(m.group(0), ""),
                   f"the client's id elsewhere in the line: {line!r}")
        t(f"{label}X-Request-Id: {FORGED_ID} is not the Request-Id, the "
          "instance or the log's rid", run)


def test_workers_down(inst, t):
    """With no worker listening on the socket, the web server's own error
    for an API path is a problem too (etc/nginx: service-unavailable, with
    Retry-After and the request's id as instance), and the retry with the
    same key, once workers are back, is carried out once."""
    port, sec = inst.port, inst.secrets["acct_alpha"]
    key = new_key("down")

    def run():
        clean, before = inst.stop_workers()
        expect(before, "no worker processes found to stop")
        r = http_request(port, "POST", "/payments", BODY, pay_headers(sec, key))
        inst.spawn_workers()
        expect_problem(r, "service-unavailable", 503, "POST with no worker")
        expect(r.header("Retry-After") == "1", f"no Retry-After: {r.brief()}")
        rid = r.header("Request-Id")
        expect(rid and r.json().get("instance") == rid,
               f"instance is not the Request-Id {rid!r}: {r.body[:300]!r}")
        r = http_request(port, "GET", "/payments/pay_0", None, pay_headers(sec))
        expect(r.status == 404, f"a worker's own 404 passes: {r.brief()}")
        first = http_request(port, "POST", "/payments", BODY, pay_headers(sec, key))
        expect(first.status == 201, f"retry with workers back: {first.brief()}")
    t("no worker answering: the API's error is problem+json", run)


def provider_charges(inst):
    return inst.provider.stats()["charges"]


def test_provider_service(inst, t):
    """The workers call the provider service over HTTP: its real failures
    drive the 502 and 504 answers, and a retry never charges twice."""
    port, sec = inst.port, inst.secrets["acct_alpha"]
    prov = inst.provider
    normal = {"IDEM_PROVIDER_LATENCY_MS": str(inst.args.latency_ms)}
    timeout_ms = inst.args.provider_timeout_ms

    def retry_gives_original(key, first_charges):
        r = http_request(port, "POST", "/payments", BODY, pay_headers(sec, key))
        expect(r.status == 201, f"retry: {r.brief()}")
        charge = json_field(r, "charge_id")
        expect(re.fullmatch(r"ch_[0-9a-f]{24}", charge or ""),
               f"retry's charge_id {charge!r}")
        again = http_request(port, "POST", "/payments", BODY, pay_headers(sec, key))
        expect(again.status == 201 and again.body == r.body and
               again.header("Idempotent-Replayed") == "true",
               f"second retry is not the replay: {again.brief()}")
        got = provider_charges(inst)
        expect(got == first_charges + 1,
               f"provider charges {got}, expected {first_charges + 1}")

    def lost_answer():
        key = new_key("lost")
        before = provider_charges(inst)
        prov.restart_backend(dict(normal, IDEM_PROVIDER_FAIL="drop"))
        try:
            r = http_request(port, "POST", "/payments", BODY, pay_headers(sec, key))
            expect(r.status == 504 and is_problem(r), f"lost answer: {r.brief()}")
            got = provider_charges(inst)
            expect(got == before + 1, f"provider charges {got} after the lost "
                   f"answer, expected {before + 1}")
            # Drop mode loses only new work's answers: the retry's call
            # under the same derived key is answered with the charge.
            retry_gives_original(key, before)
        finally:
            prov.restart_backend(normal)
    t("provider drops the connection after charging -> 504, retry gives the "
      "original, one charge", lost_answer)

    def down():
        key = new_key("down")
        before = provider_charges(inst)
        prov.stop()
        try:
            r = http_request(port, "POST", "/payments", BODY, pay_headers(sec, key))
            expect(r.status == 502 and is_problem(r), f"provider down: {r.brief()}")
        finally:
            prov.start(normal)
        got = provider_charges(inst)
        expect(got == before, f"provider charges {got} while down, expected {before}")
        retry_gives_original(key, before)
    t("provider down (connection refused) -> 502, nothing charged, retry "
      "succeeds once it is up", down)

    def slow():
        key = new_key("slow")
        before = provider_charges(inst)
        prov.restart_backend({"IDEM_PROVIDER_LATENCY_MS": str(timeout_ms + 1500)})
        try:
            r = http_request(port, "POST", "/payments", BODY, pay_headers(sec, key))
            expect(r.status == 504 and is_problem(r), f"provider timeout: {r.brief()}")
            # The service commits before its latency: the charge is there.
            retry_gives_original(key, before)
        finally:
            prov.restart_backend(normal)
    t(f"provider slower than IDEM_PROVIDER_TIMEOUT_MS ({timeout_ms}) -> 504, "
      "retry resumes, one charge", slow)


def json_field(r, name):
    try:
        return json.loads(r.body).get(name)
    except (ValueError, AttributeError):
        return None


def test_basic_auth(inst, t):
    port = inst.auth_port
    users = list(inst.users.items())

    def unauth():
        r = http_request(port, "POST", "/payments", BODY, pay_headers(key=new_key("b-none")))
        expect(r.status == 401, f"no credentials: expected 401, got {r.brief()}")
        expect((r.header("WWW-Authenticate") or "").startswith("Basic"),
               f"WWW-Authenticate {r.header('WWW-Authenticate')!r}")
        r = http_request(port, "POST", "/payments", BODY,
                         pay_headers(user=(users[0][0], "wrong"), key=new_key("b-bad")))
        expect(r.status == 401, f"wrong password: expected 401, got {r.brief()}")
    t("basic auth: no / wrong password -> 401", unauth)
    test_refused(inst, t, port, inst.auth_state, "basic auth: ", users[0][0])

    def right_password():
        before = inst.stats(inst.auth_state)
        creds = basic_auth(*users[0])
        r = http_request(port, "POST", "/payments", BODY,
                         dict(creds, **{"Content-Type": "application/json",
                                        "Idempotency-Key": f'"{new_key("b-good")}"'}))
        expect(r.status == 201, f"POST with the right password: {r.brief()}")
        pay_id = r.json().get("id", "")
        g = http_request(port, "GET", "/payments", None, creds)
        expect(g.status == 200 and pay_id.encode() in g.body,
               f"GET /payments with the right password lacks {pay_id}: {g.brief()}")
        after = inst.stats(inst.auth_state)
        expect(after["charges"] - before["charges"] == 1, "not charged once")
    t(f"basic auth: Basic {users[0][0]}:right-password -> 201, listed", right_password)
    test_metrics(t, port, "basic auth: ", basic_auth(*inst.metrics_user),
                 basic_auth(*users[0]), basic_auth(inst.metrics_user[0], "wrong-password"))

    def scopes():
        key = new_key("basic")
        before = inst.stats(inst.auth_state)
        first = {}
        for u in users:
            r = http_request(port, "POST", "/payments", BODY, pay_headers(user=u, key=key))
            expect(r.status == 201, f"{u[0]}: {r.brief()}")
            expect((r.header("Idempotent-Replayed") or "").lower() != "true",
                   f"{u[0]} got a replay of another user's payment")
            first[u[0]] = r
        a, b = (first[u[0]] for u in users)
        expect(a.header("Location") != b.header("Location"), "two users share one payment")
        for u in users:
            r = http_request(port, "POST", "/payments", BODY, pay_headers(user=u, key=key))
            f = first[u[0]]
            expect(r.status == 201 and r.body == f.body
                   and (r.header("Idempotent-Replayed") or "").lower() == "true",
                   f"{u[0]} retry: {r.brief()}")
        after = inst.stats(inst.auth_state)
        charges = after["charges"] - before["charges"]
        payments = after["payments"] - before["payments"]
        expect(charges == 2, f"charges {charges}, expected 2")
        expect(payments == 2, f"payments {payments}, expected 2")
    t("basic auth: REMOTE_USER scopes (same key, two users -> 2 charges, own replays)", scopes)


def run_server(name, build, args):
    started = time.monotonic()

    def t(test, fn):
        if DEADLINE.left() <= 0:
            RESULTS.fail(name, test, "global deadline reached")
            return
        try:
            fn()
        except Check as e:
            RESULTS.fail(name, test, e)
        except Exception as e:          # noqa: BLE001 - every error is a FAIL line
            RESULTS.fail(name, test, f"{type(e).__name__}: {str(e) or 'no detail (timed out?)'}")
        else:
            RESULTS.ok(name, test)

    inst = None
    try:
        try:
            inst = CLASSES[name](name, build, args)
            inst.start()
        except Exception as e:          # noqa: BLE001
            why = f"{type(e).__name__}: {e}"
            if inst is not None and inst.log_tail() and inst.log_tail() not in why:
                why += "\n" + inst.log_tail()
            RESULTS.fail(name, "start", why)
            return
        RESULTS.ok(name, f"start ({inst.workers} workers, port {inst.port})")
        test_contract(inst, t)
        test_request_id(inst, t)
        test_slow_clients(inst, t)
        if isinstance(inst, Nginx):
            test_per_client_limit(inst, t)
        # distinct keys first: under mod_fcgid it also brings the pool up from
        # one process, so that the duplicates really meet in different workers
        test_distinct(inst, t)
        test_duplicates(inst, t)
        test_refunds(inst, t)
        test_pages(inst, t)
        if isinstance(inst, (Apache, Nginx)):
            test_basic_auth(inst, t)
        test_restart(inst, t)
        if isinstance(inst, Nginx):
            test_workers_down(inst, t)
        if inst.provider is not None:
            test_provider_service(inst, t)
        if inst.server is not None and inst.server.poll() is not None:
            RESULTS.fail(name, "server still running", f"exited {inst.server.returncode}\n"
                         + inst.log_tail())
    finally:
        if inst is not None:
            inst.stop()
            if inst.provider is not None:
                inst.provider.stop()
            t("no sanitizer report in any log", lambda: check_no_sanitizer(inst))
            inst.cleanup()
            INSTANCES.remove(inst)
        note(f"{name}: {time.monotonic() - started:.1f} s")


def check_no_sanitizer(inst):
    """Every log under the instance's root is free of sanitizer reports:
    a data race or a leak in a worker fails the server's run even when every
    answer was right."""
    for d, _dirs, files in os.walk(inst.root):
        for f in files:
            path = os.path.join(d, f)
            if not (f.endswith(".log") or "log" in f):
                continue
            try:
                with open(path, "rb") as fh:
                    text = fh.read().decode("utf-8", "replace")
            except OSError:
                continue
            for mark in SANITIZER_MARKS:
                i = text.find(mark)
                if i >= 0:
                    raise Check(f"{path}: {mark}\n{text[max(0, i - 200):i + 2000]}")


def fifo_holders(fifo):
    """PIDs of processes that have fifo open (via /proc/PID/fd)."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == fifo:
                    pids.append(int(pid))
                    break
        except OSError:
            continue
    return pids


def run_graceful_stop(build, args):
    """SIGTERM to a worker in the middle of a request: the request finishes
    (201, charged once, stored) and only then does the worker exit.  The worker
    is held inside the provider call by the in_provider fault point on a fifo,
    so the signal lands there for certain, with no timing guess."""
    name = "lighttpd"
    test = "SIGTERM mid-request: the request completes, then the worker exits"
    inst = None
    try:
        inst = Lighttpd(name, build, args)
        fifo = os.path.join(inst.root, "gate")
        os.mkfifo(fifo, 0o600)
        if inst.uid is not None:
            os.chown(fifo, inst.uid, inst.gid)
        inst.idem_env["IDEM_FAULT"] = f"in_provider:wait={fifo}"
        inst.start()
        key = new_key("sigterm")
        body = b'{"amount": 12.34, "currency": "BRL"}'
        hdrs = pay_headers(secret=inst.secrets["acct_alpha"], key=key)
        got = {}

        def post():
            try:
                got["r"] = http_request(inst.port, "POST", "/payments", body, hdrs)
            except Exception as e:      # noqa: BLE001
                got["e"] = e
        th = threading.Thread(target=post, daemon=True)
        th.start()
        # Opening the fifo for writing succeeds only once a worker holds it
        # open for reading, that is, once it reached the fault point.
        fd, end = None, time.monotonic() + DEADLINE.timeout(15)
        while fd is None and time.monotonic() < end:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                if e.errno != errno.ENXIO:
                    raise
                time.sleep(0.01)
        expect(fd is not None, "no worker reached the provider call")
        # The worker's open() returns just after ours: its descriptor shows
        # in /proc a moment later.
        busy, end = [], time.monotonic() + DEADLINE.timeout(5)
        while not busy and time.monotonic() < end:
            busy = [p for p in fifo_holders(fifo) if p in inst.worker_pids()]
            if not busy:
                time.sleep(0.01)
        expect(len(busy) == 1, f"expected one worker holding the gate, got {busy}")
        os.kill(busy[0], signal.SIGTERM)
        expect(proc_alive(busy[0]), "the worker left with its request in hand")
        os.close(fd)
        th.join(DEADLINE.timeout(15))
        expect("r" in got, f"no answer: {got.get('e')!r}")
        expect(got["r"].status == 201, f"expected 201, got {got['r'].brief()}")
        expect(wait_exited(busy, DEADLINE.timeout(15)),
               "the worker did not exit after its request")
        st = inst.stats()
        expect(st["charges"] == 1 and st["payments"] == 1,
               f"charges={st['charges']} payments={st['payments']}")
        again = http_request(inst.port, "POST", "/payments", body, hdrs)
        expect(again.status == 201 and again.body == got["r"].body and
               again.header("Idempotent-Replayed") == "true",
               f"retry is not the replay: {again.brief()}")
    except Check as e:
        RESULTS.fail(name, test, e)
    except Exception as e:              # noqa: BLE001
        RESULTS.fail(name, test, f"{type(e).__name__}: {e}")
    else:
        RESULTS.ok(name, test)
    finally:
        if inst is not None:
            inst.cleanup()
            INSTANCES.remove(inst)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory with idem-fcgi and idemctl")
    ap.add_argument("--suite", default="live", help="name on the closing line (default live)")
    ap.add_argument("--server", action="append", choices=SERVERS,
                    help="server to test (repeatable; default: all)")
    ap.add_argument("--workers", type=int, default=6, help="worker processes (>= 4)")
    ap.add_argument("--latency-ms", type=int, default=200,
                    help="IDEM_PROVIDER_LATENCY_MS for the workers")
    ap.add_argument("--provider", choices=("service", "local"), default="service",
                    help="the workers' provider: the idem-provider service over "
                    "HTTP (default) or the in-process ledger")
    ap.add_argument("--provider-timeout-ms", type=int, default=5000,
                    help="IDEM_PROVIDER_TIMEOUT_MS for the workers")
    ap.add_argument("--deadline", type=float, default=320, help="whole run, seconds")
    ap.add_argument("--keep", action="store_true", help="keep the temp directories")
    args = ap.parse_args()
    args.provider_service = args.provider == "service"
    DEADLINE.reset(args.deadline)
    build = os.path.abspath(args.build)
    servers = args.server or list(SERVERS)
    # dedupe, keep order
    servers = list(dict.fromkeys(servers))

    become_subreaper()
    atexit.register(cleanup_all)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))

    started = time.monotonic()
    for name in servers:
        if DEADLINE.left() <= 0:
            RESULTS.fail(name, "start", "global deadline reached before this server")
            continue
        run_server(name, build, args)
        if name == "lighttpd":
            run_graceful_stop(build, args)
    note(f"total: {time.monotonic() - started:.1f} s")
    return RESULTS.summary(args.suite)


if __name__ == "__main__":
    sys.exit(main())
