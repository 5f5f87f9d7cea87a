# SPDX-License-Identifier: MIT
"""What the parts of the crash runner share: the fault points and what a
crash at each must leave, the results, tables, answers and the replay
check, and the live servers made to crash (on lib.servers)."""

import concurrent.futures
import http.client
import os
import re
import secrets
import socket
import subprocess
import time

from lib import servers
from lib.web import Reply
from lib.common import (DEADLINE, HOST, REPLAY_EXEMPT, Results,
                        has_sanitizer_report, note)


class Conf:
    """Settings of the run, from main(): the build directory, -v, and with
    --store pg the throwaway PostgreSQL server (lib.pg.Postgres) whose fresh
    databases hold the live instances' stores."""
    build = None
    verbose = False
    pg = None


CONF = Conf()
RESULTS = Results("crash ")

BODY = b'{"amount": 100.00, "currency": "BRL"}'
OTHER_BODY = b'{"amount": 250.00, "currency": "BRL"}'
HOST = "127.0.0.1"
SECRET = "sk_test_crash_" + "5d1c0a7e9b3f4e21"
ACCOUNT = "acct_crash"

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

def vnote(msg):
    if CONF.verbose:
        note(msg)


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


class Answer(Reply):
    """One HTTP answer, from CGI output or a socket: status, headers, body."""

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


# ---------------------------------------------------------------- live plumbing



class LiveArgs:
    def __init__(self, workers, latency_ms, keep):
        self.workers = workers
        self.latency_ms = latency_ms
        self.keep = keep


def crash_class(server, lease, fault, store=None):
    """A subclass of the live server class whose rendered configuration gives
    the workers IDEM_LEASE=lease and IDEM_FAULT=fault, IDEM_STORE=store when
    given (and any sanitizer options of ours).  etc/ has no placeholder for
    them, so the rendered copy in the instance's temp directory is edited;
    etc/ itself is untouched."""
    extra = {"IDEM_FAULT": fault} if fault else {}
    if store:
        extra["IDEM_STORE"] = store
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
        class CrashLighttpdSpawn(servers.LighttpdSpawn):
            def configure(self):
                super().configure()
                os.makedirs(os.path.join(self.root, "markers"))
                edit(self.conf, r'("IDEM_LEASE"\s*=>\s*)"\d+"', rf'\g<1>"{lease}"',
                     '          "{k}" => "{v}",\n')
        return CrashLighttpdSpawn
    if server == "apache":
        class CrashApache(servers.Apache):
            def configure(self):
                super().configure()
                os.makedirs(os.path.join(self.root, "markers"))
                edit(os.path.join(self.root, "idem-site.conf"),
                     r"(FcgidInitialEnv\s+IDEM_LEASE\s+)\d+", rf"\g<1>{lease}",
                     '    FcgidInitialEnv {k} "{v}"\n')
        return CrashApache
    raise ValueError(server)


def fresh_pg_store():
    """With --store pg: a fresh database of the run's server, migrated by
    idemctl migrate; its URI and the function that drops it.  Else None."""
    if CONF.pg is None:
        return None, lambda: None
    name = "idem_live_" + secrets.token_hex(6)
    uri = CONF.pg.createdb(name)
    p = subprocess.run([os.path.join(CONF.build, "idemctl"), "-s", uri, "migrate"],
                       capture_output=True, timeout=DEADLINE.timeout(30))
    if p.returncode != 0:
        CONF.pg.dropdb(name)
        raise RuntimeError(f"idemctl migrate: {p.stderr.decode()[-400:]}")
    return uri, lambda: CONF.pg.dropdb(name)


def start_instance(server, workers, lease, latency_ms, fault_fmt, keep, disarmed=()):
    """Starts one server; fault_fmt may hold {markers} (the marker directory).
    The files named in disarmed are created in it first: a killonce fault
    whose marker exists never fires, so the health checks of the start-up
    (mid_response is on every response's path) cannot spend it; the test
    arms it by removing the marker just before its request.  With --store pg
    the workers and idemctl use a fresh database (dropped by
    cleanup_instance)."""
    # the marker path depends on the temp directory, which the constructor
    # makes: build the fault string lazily through a class attribute.
    holder = {}
    store, drop = fresh_pg_store()

    base = crash_class(server, lease, "@FAULT@" if fault_fmt else None, store)

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
    try:
        inst = Inst(server, CONF.build, LiveArgs(workers, latency_ms, keep))
    except BaseException:
        drop()
        raise
    inst.drop_store = drop
    if store:
        inst.idem_env["IDEM_STORE"] = store
    try:
        inst.start()
        if isinstance(inst, servers.Apache):
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
    try:
        inst.cleanup()
    finally:
        if inst in servers.INSTANCES:
            servers.INSTANCES.remove(inst)
        getattr(inst, "drop_store", lambda: None)()


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

    def __init__(self, answer=None, error=None, status=None, partial=None,
                 rid=None):
        self.answer = answer
        self.error = error          # None, or "reset", "closed", "refused", ...
        self.status = status        # for a truncated answer
        self.partial = partial
        self.rid = rid              # the X-Request-Id it was sent with
        self.when = time.time()     # when the exchange ended

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
    """One request on a connection of its own.  Each carries an
    X-Request-Id of its own, which lighttpd hands the worker and the
    worker writes in its log line (client_request_id=...):
    worker_log_line() finds the line of an answer, or tells that no
    worker wrote it."""
    conn = http.client.HTTPConnection(HOST, port, timeout=min(timeout, DEADLINE.timeout(timeout)))
    status = hdrs = None
    rid = "crash-" + secrets.token_hex(8)
    try:
        h = {"Connection": "close", "X-Request-Id": rid}
        h.update(headers or {})
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        status, hdrs = r.status, r.getheaders()
        data = r.read()
        return Outcome(Answer(r.status, hdrs, data), rid=rid)
    except http.client.IncompleteRead as e:
        return Outcome(error="truncated", status=status, partial=e.partial, rid=rid)
    except (socket.timeout, TimeoutError):
        return Outcome(error="timeout", rid=rid)
    except ConnectionRefusedError:
        return Outcome(error="refused", rid=rid)
    except ConnectionResetError:
        return Outcome(error="reset", rid=rid)
    except BrokenPipeError:
        return Outcome(error="broken pipe", rid=rid)
    except http.client.RemoteDisconnected:
        return Outcome(error="closed without answer", rid=rid)
    except (OSError, http.client.HTTPException) as e:
        return Outcome(error=type(e).__name__, rid=rid)
    finally:
        conn.close()


def worker_log_line(inst, rid):
    """The workers' log line of the request sent with X-Request-Id rid
    (one line a request, "TIME idem: ... STATUS account=... key=KEYHASH
    outcome=... ms=MS client_request_id=RID rid=ID": the client's id is
    logged beside the request's own), or
    None when no worker logged it: a worker that dies with a request logs
    nothing, and the web server answers for it."""
    pat = re.compile(r"^\S+ idem: .* client_request_id=" + re.escape(rid)
                     + r" rid=\S+$", re.M)
    for path in inst.logs:
        try:
            with open(path, errors="replace") as f:
                m = pat.search(f.read())
        except OSError:
            continue
        if m:
            return m.group(0)
    return None


def whose_answer(inst, o):
    """Who gave the outcome o (a 5xx, say): the worker's own log line, or
    the web server's (lighttpd's or Apache's) error-log lines that name a
    backend failure within a second and a half of the answer."""
    line = worker_log_line(inst, o.rid) if o.rid else None
    if line is not None and o.answer is not None and \
            f" {o.answer.status} account=" in line:
        return f"the worker's: {line}"
    if line is not None:
        return (f"the web server's: the worker logged another answer and "
                f"died before it was sent: {line}")
    server = []
    for path in inst.logs:
        if not path.endswith(("lighttpd-error.log", "apache-error.log")):
            continue
        try:
            with open(path, errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for ln in lines:
            m = re.match(r"\[?(?:\w{3} )?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|"
                         r"\w{3} \d\d \d\d:\d\d:\d\d(?:\.\d+)? \d{4})", ln)
            if not m or not re.search(r"response not received|end-of-file|"
                                      r"reset|died|refused|Premature", ln):
                continue
            for fmt in ("%Y-%m-%d %H:%M:%S", "%b %d %H:%M:%S.%f %Y",
                        "%b %d %H:%M:%S %Y"):
                try:
                    t = time.mktime(time.strptime(m.group(1), fmt))
                    break
                except ValueError:
                    t = None
            if t is not None and abs(t - o.when) <= 1.5:
                server.append(ln.strip())
    return (f"no worker logged rid={o.rid}: the web server's own answer"
            + ("; its log then: " + " | ".join(server[-3:]) if server else ""))


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
