#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The demo page (demo/demo.html) in headless Chromium, against the real
thing: lighttpd (etc/lighttpd/idem-external.conf) in front of spawn-fcgi
workers of idem-fcgi, which call the provider service idem-provider.

    python3 tests/browser/run.py --build BUILD_DIR [--shots DIR] [--keep]

Each step drives the page as a visitor would, waits (WebDriverWait, on
what the page shows) for its answer, then checks what the page shows AND
what was recorded: the provider's ledger (GET /stats), the store
(idemctl stats) and the workers' JSON request log (IDEM_LOG=json).  A
screenshot of each step goes to --shots (default BUILD_DIR/tests/browser/
shots).

No step waits on a timer.  The provider holds every charge at its fault
point provider_committed (IDEM_FAULT=provider_committed:wait=FIFO): the
charge is in its ledger and the answer not yet sent, until the test
releases it.  So "lose the response" and "a second tab while the first
is in flight" happen inside a window the test opens and closes, however
slow the machine.  Needs a build with --enable-fault-points, and Debian's
chromium, chromium-driver and python3-selenium.

Output: "ok - STEP" / "FAIL - STEP: why", then "browser: N passed, M failed".
"""

import argparse
import atexit
import hashlib
import json
import os
import signal
import stat
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib.common import DEADLINE, Results, become_subreaper, note  # noqa: E402
from lib.servers import Lighttpd, cleanup_all  # noqa: E402
from lib.web import http_request  # noqa: E402

try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.chrome.service import Service as ChromeService
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:         # reported in main(), with the closing line
    webdriver = None

RESULTS = Results()
# The quick start's demo accounts, whose keys the page offers.
DEMO = {"acct_alice": "sk_test_alice_4f9c2b7e1d8a",
        "acct_bob": "sk_test_bob_7a3e9d1c5b2f"}
WAIT = 30       # seconds any one condition may take on a loaded machine


class Check(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise Check(why)


class Gate:
    """The fifo the provider opens at its fault point: reached() returns
    once a charge is held there (the provider opened it to read), and
    release() lets that charge's answer go."""

    def __init__(self, path, uid, gid):
        self.path = path
        os.mkfifo(path, 0o660)
        if uid is not None:
            os.chown(path, uid, gid)
        self.fd = None

    def reached(self, timeout=WAIT):
        got = {}

        def opener():
            got["fd"] = os.open(self.path, os.O_WRONLY)
        t = threading.Thread(target=opener, daemon=True)
        t.start()
        t.join(DEADLINE.timeout(timeout))
        expect("fd" in got, "no charge reached the provider's fault point")
        self.fd = got["fd"]

    def release(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def pass_one(self):
        """Lets the next charge through without holding it."""
        self.reached()
        self.release()


class Demo:
    def __init__(self, args):
        self.args = args
        self.inst = Lighttpd("browser", os.path.abspath(args.build), args)
        inst = self.inst
        with open(os.path.join(inst.state, "keys"), "a") as f:
            for acct, sec in DEMO.items():
                f.write(f"{acct} {hashlib.sha256(sec.encode()).hexdigest()}\n")
        inst.idem_env["IDEM_LOG"] = "json"
        self.gate = Gate(os.path.join(inst.root, "provider-gate"), inst.uid, inst.gid)
        inst.provider.start(
            {"IDEM_FAULT": f"provider_committed:wait={self.gate.path}"})
        inst.start()
        self.base = f"http://127.0.0.1:{inst.port}"
        self.driver = None

    # -- what the server side recorded ---------------------------------
    def charges(self):
        return self.inst.provider.stats()["charges"]

    def store(self):
        return self.inst.stats()

    def log_lines(self):
        """The workers' JSON request log lines for POST /payments."""
        out = []
        with open(os.path.join(self.inst.root, "idem-fcgi.log"), errors="replace") as f:
            for ln in f:
                if ln.startswith("{"):
                    doc = json.loads(ln)
                    if doc["method"] == "POST" and doc["path"] == "/payments":
                        out.append(doc)
        return out

    def log_of(self, outcome, status, nth=1):
        """The nth JSON log line with this outcome (POST /payments, in the
        order written), once it is there: a worker writes it just after
        its commit, which the page may have seen first."""
        def found(_):
            lines = [d for d in self.log_lines() if d["outcome"] == outcome]
            return lines[nth - 1] if len(lines) >= nth else False
        try:
            d = WebDriverWait(None, DEADLINE.timeout(WAIT),
                              poll_frequency=0.05).until(found)
        except TimeoutException:
            raise Check(f"no JSON log line with outcome {outcome!r}: "
                        f"{self.log_lines()}")
        expect(d["status"] == status, f"log: status {d['status']} for {outcome}")
        expect(d["account"] == "acct_alice", f"log: account {d['account']!r}")
        expect(d["key"] and len(d["key"]) == 32, f"log: key {d['key']!r}")
        return d

    # -- the browser -----------------------------------------------------
    def open_browser(self):
        opts = webdriver.ChromeOptions()
        opts.binary_location = self.args.chromium
        for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                  "--disable-gpu", "--window-size=1200,1900", "--lang=en-US",
                  f"--user-data-dir={tempfile.mkdtemp(prefix='idem-chromium-')}"):
            opts.add_argument(a)
        service = ChromeService(executable_path=self.args.chromedriver)
        self.driver = webdriver.Chrome(options=opts, service=service)
        self.driver.set_page_load_timeout(WAIT)

    def wait(self, cond, why, timeout=WAIT):
        try:
            return WebDriverWait(self.driver, DEADLINE.timeout(timeout),
                                 poll_frequency=0.05).until(lambda d: cond(d))
        except TimeoutException:
            raise Check(f"timed out waiting until {why}")

    def load(self):
        self.driver.get(self.base + "/demo.html")
        self.wait(lambda d: d.find_element(By.TAG_NAME, "body")
                  .get_attribute("data-ready") == "true", "the page is ready")

    def entries(self):
        return self.driver.find_elements(By.CSS_SELECTOR, "#log > li.entry")

    def new_entry(self, before, outcome, why):
        """The entry added since there were `before`, once its outcome is
        `outcome`."""
        def done(d):
            es = self.entries()
            if len(es) <= before:
                return False
            e = es[0]
            return e if e.get_attribute("data-outcome") == outcome else False
        try:
            return self.wait(done, why)
        except Check:
            es = self.entries()
            got = es[0].get_attribute("data-outcome") if len(es) > before else "none"
            raise Check(f"{why}: the newest entry is {got!r}: "
                        f"{es[0].text[:400] if es else ''!r}")

    def field(self, id_):
        return self.driver.find_element(By.ID, id_)

    def set_value(self, id_, value):
        e = self.field(id_)
        e.clear()
        e.send_keys(value)

    def pay(self):
        before = len(self.entries())
        self.field("pay").click()
        return before

    def shot(self, name):
        os.makedirs(self.args.shots, exist_ok=True)
        path = os.path.join(self.args.shots, name)
        # The whole page, not only what the window shows.
        h = self.driver.execute_script(
            "return document.documentElement.scrollHeight")
        self.driver.set_window_size(1200, max(900, min(int(h) + 140, 4000)))
        self.driver.save_screenshot(path)
        note(f"screenshot {path}")

    def headers_of(self, entry):
        """The response headers the entry shows, by lower-case name."""
        out = {}
        for tr in entry.find_elements(By.CSS_SELECTOR, "table.headers tr"):
            th = tr.find_element(By.TAG_NAME, "th").text.strip().lower()
            out[th] = tr.find_element(By.TAG_NAME, "td").text.strip()
        return out

    def problem_link(self, entry, slug):
        a = entry.find_element(By.CSS_SELECTOR, ".problem a")
        href = a.get_attribute("href")
        path = href[len(self.base):]
        expect(href.startswith(self.base) and
               path in (f"/problems/{slug}", f"/problems/{slug}.html"),
               f"problem link {href!r}")
        r = http_request(self.inst.port, "GET", path)
        expect(r.status == 200 and b"<h1" in r.body,
               f"the problem page {path}: {r.status}")


def step_pay(t):
    """Pay -> 201: the page shows the payment; one charge, one payment."""
    t.load()
    t.set_value("amount", "100.00")
    key = t.field("key").get_attribute("value")
    expect(key.startswith("order-"), f"generated key {key!r}")
    n = t.pay()
    t.gate.pass_one()
    e = t.new_entry(n, "created", "the page shows 201")
    expect(e.get_attribute("data-status") == "201", "status shown")
    h = t.headers_of(e)
    pay_id = e.get_attribute("data-payment")
    expect(h.get("location") == f"/payments/{pay_id}", f"Location {h.get('location')!r}")
    expect("idempotent-replayed" not in h, "a first answer marked replayed")
    expect("HTTP 201 Created" in e.text, "status line not shown")
    t.wait(lambda d: t.field("charges").text == "1", "the page counts 1 charge")
    expect(t.charges() == 1, f"provider charges {t.charges()}")
    s = t.store()
    expect(s["payments"] == 1 and s["charges"] == 1, f"idemctl stats {s}")
    t.log_of("claim", 201)
    t.shot("1-paid.png")


def step_lost_retry(t):
    """Lose the response, then retry: the original payment, replayed; the
    provider charged once for it."""
    t.field("new-key").click()
    key = t.field("key").get_attribute("value")
    t.field("lose").click()
    n = t.pay()
    t.gate.reached()                 # charged, answer held
    try:
        e = t.new_entry(n, "lost", "the page drops its request after the charge")
        expect(t.charges() == 2, f"provider charges {t.charges()} while held")
        s = t.store()
        expect(s["payments"] == 1 and s.get("in_progress") == 1,
               f"idemctl stats while held: {s}")
    finally:
        t.gate.release()
    t.wait(lambda d: e.get_attribute("data-recorded"),
           "the page sees the server record the payment")
    lost_id = e.get_attribute("data-recorded")
    expect("aborted" in e.text, "no word of the aborted request")
    s = t.store()
    expect(s["payments"] == 2, f"idemctl stats after: {s}")
    t.shot("2-lost.png")

    claim = t.log_of("claim", 201, 2)
    n = len(t.entries())
    e.find_element(By.CSS_SELECTOR, "button.retry").click()
    e = t.new_entry(n, "replayed", "the retry is replayed")
    expect(t.field("key").get_attribute("value") == key, "the key changed")
    expect(not t.field("lose").is_selected(), "the retry lost its answer too")
    h = t.headers_of(e)
    expect(h.get("idempotent-replayed") == "true", f"headers {h}")
    expect(e.get_attribute("data-payment") == lost_id,
           f"replayed {e.get_attribute('data-payment')} not {lost_id}")
    expect("2 → 2 (no new charge)" in e.text, f"counts: {e.text[-200:]!r}")
    expect(t.charges() == 2, f"provider charges {t.charges()}: charged again")
    s = t.store()
    expect(s["payments"] == 2, f"idemctl stats {s}")
    replay = t.log_of("replay", 201)
    expect(replay["key"] == claim["key"],
           f"the retry's keyhash {replay['key']} is not the claim's {claim['key']}")
    t.shot("3-replayed.png")


def step_second_tab(t):
    """A second tab with the same key while the first is in flight: 409."""
    t.field("new-key").click()
    first = t.driver.current_window_handle
    n = t.pay()
    t.gate.reached()
    try:
        t.field("second-tab").click()
        t.wait(lambda d: len(d.window_handles) == 2, "a second tab opens")
        second = next(h for h in t.driver.window_handles if h != first)
        t.driver.switch_to.window(second)
        e = t.new_entry(0, "conflict", "the second tab shows 409")
        h = t.headers_of(e)
        expect(1 <= int(h.get("retry-after", "0")) <= 30, f"Retry-After {h}")
        t.problem_link(e, "request-in-progress")
        s = t.store()
        expect(s.get("in_progress") == 1 and s["payments"] == 2, f"idemctl stats {s}")
        expect(t.charges() == 3, f"provider charges {t.charges()}")
        conflict = t.log_of("conflict", 409)
        t.shot("4-second-tab-409.png")
        t.driver.close()
        t.driver.switch_to.window(first)
    finally:
        t.gate.release()
    e = t.new_entry(n, "created", "the first tab gets its 201")
    expect(t.charges() == 3, f"provider charges {t.charges()}")
    expect(t.store()["payments"] == 3, "payments")
    expect(t.log_of("claim", 201, 3)["key"] == conflict["key"],
           "the 409's keyhash is not the first tab's")


def step_other_amount(t):
    """Another amount with the same key: 422, nothing charged."""
    t.set_value("amount", "250.00")
    n = t.pay()
    e = t.new_entry(n, "mismatch", "the page shows 422")
    expect(e.get_attribute("data-status") == "422", "status")
    t.problem_link(e, "key-reused")
    expect(t.charges() == 3, f"provider charges {t.charges()}")
    expect(t.store()["payments"] == 3, "payments")
    expect(t.log_of("mismatch", 422)["key"] == t.log_of("claim", 201, 3)["key"],
           "the 422's keyhash is not the original's")
    t.shot("5-other-amount-422.png")


STEPS = [("pay: 201", step_pay),
         ("lose the response, retry: replayed, one charge", step_lost_retry),
         ("second tab, same key in flight: 409", step_second_tab),
         ("other amount, same key: 422", step_other_amount)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--shots", help="screenshot directory")
    ap.add_argument("--suite", default="browser")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    ap.add_argument("--deadline", type=float, default=150)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    args.shots = args.shots or os.path.join(os.path.abspath(args.build),
                                            "tests", "browser", "shots")
    # What lib.servers reads of a run's options.
    args.workers = 2
    args.latency_ms = 0
    args.provider_service = True
    args.provider_timeout_ms = 30000
    DEADLINE.reset(args.deadline)
    become_subreaper()
    atexit.register(cleanup_all)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))

    missing = [p for p in (args.chromium, args.chromedriver)
               if not os.access(p, os.X_OK)]
    if webdriver is None or missing:
        RESULTS.fail("set-up", "needs Debian's chromium, chromium-driver and "
                     f"python3-selenium (missing: {missing or 'selenium'})")
        return RESULTS.summary(args.suite)
    started = time.monotonic()
    t = None
    try:
        t = Demo(args)
        t.open_browser()
    except (RuntimeError, OSError, WebDriverException, Check) as e:
        RESULTS.fail("set-up", e)
        if t is not None and t.driver is not None:
            t.driver.quit()
        return RESULTS.summary(args.suite)
    failed = None
    try:
        for name, fn in STEPS:
            if failed is not None:
                RESULTS.fail(name, f"not run: the page's state after "
                             f"{failed!r} failed is unknown")
                continue
            try:
                fn(t)
                RESULTS.ok(name)
            except (Check, WebDriverException, TimeoutError, OSError,
                    RuntimeError, KeyError, ValueError) as e:
                RESULTS.fail(name, f"{type(e).__name__}: {e}")
                failed = name
    finally:
        t.driver.quit()
    note(f"total: {time.monotonic() - started:.1f} s")
    return RESULTS.summary(args.suite)


if __name__ == "__main__":
    sys.exit(main())
