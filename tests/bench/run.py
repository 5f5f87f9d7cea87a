#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmark: idem-fcgi behind lighttpd + spawn-fcgi, driven by wrk; writes BENCHMARKS.md.

    python3 tests/bench/run.py --build BUILD_DIR [--out BENCHMARKS.md]

BUILD_DIR is an optimised build configured with --enable-bench in which
"make bench-programs" has been run (./quickstart bench does all of it).
Every case runs once per round, in the same order, for BENCH_ROUNDS rounds;
the report gives medians with min-max.  Settings come from the environment
(see tests/bench/README.md); any IDEM_* variable set by the user reaches the
workers, except the paths each instance owns.

Beside idem's cases, two Node.js peers (tests/bench/peers/: Express with
express-idempotency or @node-idempotency/core, each on its own Redis at
appendfsync always) run the same requests in the same rounds.

Python 3 standard library only.  Only 127.0.0.1 is used; every load is
bounded in time, and so is every process started here.
"""

import argparse
import atexit
import datetime
import grp
import hashlib
import http.client
import json
import os
import platform
import pwd
import random
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from lib import common as libcommon  # noqa: E402
from lib.cluster import Cluster  # noqa: E402
ETC = os.path.join(REPO, "etc")
WWW = os.path.join(REPO, "www")
HOST = "127.0.0.1"
BODY = '{"amount": 100.00, "currency": "BRL"}'
ACCOUNT = "acct_bench"
# The accounts the cluster's fresh payments are spread over, in turn.
CLUSTER_ACCOUNTS = 64
METRICS_ACCOUNT = "metrics"
# The page size of the long list's cases (GET /payments?limit=PAGE).
PAGE = 100
# A payment id that names no payment: the cursor of pages-none.
NO_PAYMENT = "pay_ffffffffffffffffffffffff"
# Paths belong to each instance; a user's value would make them share state.
OWN_ENV = ("IDEM_DB_DIR", "IDEM_PROVIDER_DIR", "IDEM_KEYS_FILE")


def env_int(name, default, low=0):
    v = os.environ.get(name, "")
    if v == "":
        return default
    try:
        n = int(v)
    except ValueError:
        sys.exit(f"bench: {name}={v!r} is not a whole number")
    if n < low:
        sys.exit(f"bench: {name} must be at least {low}")
    return n


class Settings:
    """What the environment asks for; every figure of the report names these."""

    def __init__(self):
        self.rounds = env_int("BENCH_ROUNDS", 3, 1)
        self.seconds = env_int("BENCH_SECONDS", 8, 1)
        self.workers = env_int("BENCH_WORKERS", 1, 1)
        self.wrk_threads = env_int("BENCH_WRK_THREADS", 2, 1)
        self.connections = env_int("BENCH_CONNECTIONS", 32, 1)
        self.latency_ms = env_int("BENCH_LATENCY_MS", 100, 0)
        self.lat_connections = env_int("BENCH_LATENCY_CONNECTIONS", 256, 1)
        self.store_seconds = env_int("BENCH_STORE_SECONDS", 3, 1)
        self.store_threads = env_int("BENCH_STORE_THREADS", 16, 1)
        self.small_keys = env_int("BENCH_SMALL_KEYS", 10_000, 1)
        self.big_keys = env_int("BENCH_BIG_KEYS", 1_000_000, 1)
        self.purge_keys = env_int("BENCH_PURGE_KEYS", 1_000_000, 0)
        self.purge_batch = env_int("BENCH_PURGE_BATCH", 0, 0)   # 0: idemctl's
        self.purge_limit = env_int("BENCH_PURGE_LIMIT", 600, 10)
        self.strace_seconds = env_int("BENCH_STRACE_SECONDS", 3, 1)
        self.timeout = env_int("BENCH_WRK_TIMEOUT", 30, 1)
        self.keep = os.environ.get("BENCH_KEEP", "") not in ("", "0")
        self.state_dir = os.environ.get("BENCH_STATE_DIR", "")
        self.fill_dir = os.environ.get("BENCH_FILL_DIR", "")
        self.cases = [c for c in os.environ.get("BENCH_CASES", "").split(",") if c]
        self.cluster = env_int("BENCH_CLUSTER", 1, 0) > 0
        self.provider_threads = env_int("BENCH_PROVIDER_THREADS", 64, 1)
        self.peers = env_int("BENCH_PEERS", 1, 0) > 0
        self.cost = env_int("BENCH_COST", 1, 0) > 0
        self.peer_workers = env_int("BENCH_PEER_WORKERS", 1, 1)
        self.pages = env_int("BENCH_PAGES", 1, 0) > 0
        self.page_payments = env_int("BENCH_PAGE_PAYMENTS", 100_000, 2 * PAGE)
        self.wrk_threads_for = lambda conns: max(1, min(self.wrk_threads, conns))


S = None            # Settings, set in main
INSTANCES = []      # every server started, for cleanup at exit


def say(msg):
    print(f"bench: {msg}", flush=True)


# ---------------------------------------------------------------- plumbing

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def render(template, mapping, out):
    """Substitutes @NAME@ placeholders; one left on a live line is an error."""
    with open(template) as f:
        text = f.read()
    for k, v in mapping.items():
        text = text.replace(f"@{k}@", str(v))
    live = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    left = sorted(set(re.findall(r"@[A-Z_]+@", "\n".join(live))))
    if left:
        raise RuntimeError(f"{template}: placeholders left: {' '.join(left)}")
    with open(out, "w") as f:
        f.write(text)
    return out


def parse_env_file(path):
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            k, v = line.split("=", 1)
            env[k.strip()] = v.strip().strip('"')
    return env


def proc_alive(pid):
    """False once the process is gone or a zombie with no thread left: a
    threaded worker's leader shows Z while its other threads still exit,
    and its descriptors (the listening socket) are open until they have."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        if stat[stat.rindex(")") + 2] != "Z":
            return True
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except (OSError, ValueError):
        return False


def pids_of_exe(exe):
    """Live processes running exe (each instance runs its own copy)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            target = os.readlink(f"/proc/{d}/exe")
        except OSError:
            continue
        if target in (exe, exe + " (deleted)") and proc_alive(int(d)):
            out.append(int(d))
    return sorted(out)


def kill_pids(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def wait_gone(pids, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not any(proc_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return not any(proc_alive(p) for p in pids)


def run_account():
    """The account servers and workers run as: unprivileged when we are root."""
    if os.geteuid() != 0:
        pw = pwd.getpwuid(os.geteuid())
        return pw.pw_name, grp.getgrgid(pw.pw_gid).gr_name, None, None
    for name in ("www-data", "nobody", "daemon"):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return name, grp.getgrgid(pw.pw_gid).gr_name, pw.pw_uid, pw.pw_gid
    raise RuntimeError("no unprivileged account (www-data, nobody) to run servers as")


def traversable(path):
    """True when every directory up to path can be entered by anyone."""
    p = os.path.realpath(path)
    while p not in ("/", ""):
        if os.path.exists(p) and not os.stat(p).st_mode & 0o001:
            return False
        p = os.path.dirname(p)
    return True


def chown_tree(path, uid, gid):
    if uid is None:
        return
    for d, _, files in os.walk(path):
        os.chown(d, uid, gid)
        for f in files:
            os.chown(os.path.join(d, f), uid, gid)


def mount_of(path):
    """(mount point, fs type, device) of the file system holding path."""
    path = os.path.realpath(path)
    best = ("/", "?", "?")
    with open("/proc/mounts") as f:
        for line in f:
            dev, mnt, fstype = line.split()[:3]
            mnt = mnt.replace("\\040", " ")
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and \
                    len(mnt) >= len(best[0]):
                best = (mnt, fstype, dev)
    return best


def tail(path, n=12):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    return "\n".join(f"  {os.path.basename(path)}: {ln}" for ln in lines[-n:])


def median_range(values, fmt="{:,.0f}"):
    vals = [v for v in values if v is not None]
    if not vals:
        return "n/a"
    m = statistics.median(vals)
    if len(vals) == 1:
        return fmt.format(m)
    return f"{fmt.format(m)} ({fmt.format(min(vals))}–{fmt.format(max(vals))})"


def med(values):
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def ms(us):
    return "n/a" if us is None else f"{us / 1000:.2f}"


# ---------------------------------------------------------------- HTTP

def http_call(port, method, path, body=None, headers=None, timeout=10):
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


# ---------------------------------------------------------------- servers

class Server:
    """lighttpd (etc/lighttpd/idem-external.conf) + spawn-fcgi workers of one program."""

    def __init__(self, name, program, env_extra=None, state_files=None):
        self.name = name
        self.root = os.path.join(S.run_dir, name)
        os.makedirs(self.root)
        self.user, self.group, self.uid, self.gid = S.account
        self.port = free_port()
        self.bindir = os.path.join(self.root, "bin")
        os.makedirs(self.bindir)
        self.exe = os.path.join(self.bindir, os.path.basename(program))
        shutil.copy2(program, self.exe)
        self.idemctl = None
        if os.path.basename(program) == "idem-fcgi":
            self.idemctl = os.path.join(self.bindir, "idemctl")
            shutil.copy2(os.path.join(S.build, "idemctl"), self.idemctl)
        self.state = os.path.join(self.root, "state")
        self.db = os.path.join(self.state, "db")
        os.makedirs(self.db)
        os.makedirs(os.path.join(self.state, "provider"))
        with open(os.path.join(self.state, "keys"), "w") as f:
            for acct, sec in S.secrets.items():
                f.write(f"{acct} {hashlib.sha256(sec.encode()).hexdigest()}\n")
        # Sealed at rest as etc/idem.env says (IDEM_SECRET_FILE= in the
        # environment measures the store in the clear).
        subprocess.run([os.path.join(S.build, "idemctl"), "new-secret",
                        os.path.join(self.state, "secret")], check=True,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        for src, dst in (state_files or {}).items():
            self.put_state_file(src, dst)
        self.mapping = {"PORT": self.port, "ROOT": self.root, "BINDIR": self.bindir,
                        "SBINDIR": self.bindir, "STATE": self.state, "WWW": WWW, "USER": self.user,
                        "GROUP": self.group, "PROVIDER_LATENCY_MS": 0}
        self.env = parse_env_file(render(os.path.join(ETC, "idem.env"), self.mapping,
                                         os.path.join(self.root, "idem.env")))
        self.env.update(S.bench_env)
        self.env.update(S.user_env)
        self.env.update(env_extra or {})
        # The provider is always named: the simulated one unless the
        # caller points the workers at the provider service.
        if not self.env.get("IDEM_PROVIDER_URL"):
            self.env.setdefault("IDEM_PROVIDER", "simulated")
        self.conf = render(os.path.join(ETC, "lighttpd", "idem-external.conf"),
                           self.mapping, os.path.join(self.root, "lighttpd.conf"))
        self.wlog = os.path.join(self.root, "worker.log")
        open(self.wlog, "a").close()
        self.logs = [self.wlog, os.path.join(self.root, "lighttpd-error.log"),
                     os.path.join(self.root, "lighttpd.out")]
        chown_tree(self.root, self.uid, self.gid)
        self.lighttpd = None
        self.polls = 0          # requests to /metrics made by us
        INSTANCES.append(self)

    def put_state_file(self, src, dst):
        """Copies src into the store directory as dst, owned by the account
        the workers run as; before start()."""
        path = os.path.join(self.db, dst)
        shutil.copyfile(src, path)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)        # so its write-back does not land in a case
        finally:
            os.close(fd)
        if self.uid is not None:
            os.chown(path, self.uid, self.gid)

    def base_env(self, extra=None):
        env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
               "LANG": "C"}
        env.update(extra or {})
        return env

    def spawn_argv(self):
        sock = os.path.join(self.root, "idem-fcgi.sock")
        argv = ["spawn-fcgi", "-F", str(S.workers), "-s", sock, "-M", "0660",
                "-P", os.path.join(self.root, "spawn-fcgi.pid")]
        if self.uid is not None:
            argv += ["-U", self.user, "-G", self.group, "-u", self.user, "-g", self.group]
        # As quickstart serve does: each worker's stderr (its request log) to a file.
        return argv + ["--", "/bin/sh", "-c", 'exec "$0" 2>>"$1"', self.exe, self.wlog]

    def start(self):
        with open(os.path.join(self.root, "spawn-fcgi.out"), "ab") as out:
            p = subprocess.run(self.spawn_argv(), stdin=subprocess.DEVNULL, stdout=out,
                               stderr=subprocess.STDOUT, cwd=self.root,
                               env=self.base_env(self.env), timeout=30)
        if p.returncode != 0:
            raise RuntimeError(f"{self.name}: spawn-fcgi exited {p.returncode}\n"
                               + self.log_tail())
        end = time.monotonic() + 5
        while time.monotonic() < end and len(self.workers()) < S.workers:
            time.sleep(0.05)
        if len(self.workers()) < S.workers:
            raise RuntimeError(f"{self.name}: {len(self.workers())} of {S.workers} "
                               "workers alive\n" + self.log_tail())
        with open(self.logs[2], "ab") as out:
            self.lighttpd = subprocess.Popen(
                ["lighttpd", "-D", "-f", self.conf], stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, cwd=self.root,
                env=self.base_env(), start_new_session=True)
        end = time.monotonic() + 15
        last = "no answer"
        while time.monotonic() < end:
            if self.lighttpd.poll() is not None:
                raise RuntimeError(f"{self.name}: lighttpd exited "
                                   f"{self.lighttpd.returncode}\n" + self.log_tail())
            try:
                st, _, body = http_call(self.port, "GET", "/healthz", timeout=2)
                if st == 200:
                    return
                last = f"{st} {body[:120]!r}"
            except (OSError, http.client.HTTPException) as e:
                last = repr(e)
            time.sleep(0.05)
        raise RuntimeError(f"{self.name}: GET /healthz not 200 ({last})\n" + self.log_tail())

    def workers(self):
        return pids_of_exe(self.exe)

    def log_tail(self):
        return "\n".join(t for t in (tail(p) for p in self.logs) if t)

    def stop(self):
        p, self.lighttpd = self.lighttpd, None
        if p is not None:
            for sig, wait in ((signal.SIGTERM, 8), (signal.SIGKILL, 5)):
                try:
                    os.killpg(p.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
                try:
                    p.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        pids = self.workers()
        kill_pids(pids, signal.SIGTERM)
        if not wait_gone(pids, 5):
            kill_pids(pids, signal.SIGKILL)
            wait_gone(pids, 3)

    def metrics(self):
        """The /metrics counters as {name: value}, or None when not served."""
        auth = {"Authorization": f"Bearer {S.secrets[METRICS_ACCOUNT]}"}
        for headers in (auth, {}):
            self.polls += 1
            try:
                st, _, body = http_call(self.port, "GET", "/metrics", headers=headers)
            except (OSError, http.client.HTTPException):
                return None
            if st == 200:
                out = {}
                for m in re.finditer(r"^([a-z_]+) ([0-9.e+]+)$",
                                     body.decode("utf-8", "replace"), re.M):
                    out[m.group(1)] = float(m.group(2))
                return out
            if st != 401:
                return None
        return None

    def settle(self, limit=40):
        """Waits until requests that wrk left in flight are answered: for a
        second no request but our own polls of /metrics is counted.  Returns
        the counters."""
        end = time.monotonic() + limit
        polls = self.polls
        last = self.metrics()
        if last is None:
            time.sleep(1)
            return None
        still_since = time.monotonic()
        while time.monotonic() < end:
            time.sleep(0.25)
            ours = self.polls - polls
            polls = self.polls
            now = self.metrics()
            if now is None:
                return last
            moved = now.get("idem_requests_total", 0) - last.get("idem_requests_total", 0)
            if moved > ours:
                still_since = time.monotonic()
            elif time.monotonic() - still_since >= 1.0:
                return now
            last = now
        say(f"{self.name}: still answering after {limit} s")
        return last

    def ctl_env(self):
        return self.base_env(self.env)

    def run_as(self):
        if self.uid is None:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


# ---------------------------------------------------------------- peers

# The Node.js idempotency libraries measured beside idem (tests/bench/peers/):
# (id, the npm packages of its stack).  Each is Express with its library's
# Redis adapter, its own redis-server at appendfsync always.
PEERS_DIR = os.path.join(HERE, "peers")
PEERS = (("express-idempotency", ("express-idempotency",
                                  "express-idempotency-redis-adapter")),
         ("node-idempotency", ("@node-idempotency/core",
                               "@node-idempotency/storage-adapter-redis")))
# The idem cases the peers run beside, in their shapes: the peers' case of
# shape X is named PEER-X.
PEER_SHAPES = ("replay", "fresh", "fresh-wide", "fresh-lat")
PEER_WARMUP_S = 3          # seconds of fresh payments on each instance first


class PeerBroken(Exception):
    """A peer answered the functional check wrongly."""


def redis_call(sock_path, *args, timeout=5):
    """One command to a redis-server over its unix socket; its reply (a
    string, integer, None, or a list of those), or RuntimeError."""
    req = f"*{len(args)}\r\n".encode()
    for a in args:
        a = str(a).encode()
        req += b"$%d\r\n%s\r\n" % (len(a), a)

    def reply(f):
        head = f.readline()
        if not head.endswith(b"\r\n"):
            raise RuntimeError("redis closed the connection")
        kind, val = head[:1], head[1:-2].decode()
        if kind == b"-":
            raise RuntimeError(f"redis: {val}")
        if kind in (b"+", b":"):
            return val
        if kind == b"$":
            n = int(val)
            return None if n < 0 else f.read(n + 2)[:n].decode("utf-8", "replace")
        if kind == b"*":
            n = int(val)
            return None if n < 0 else [reply(f) for _ in range(n)]
        raise RuntimeError(f"redis: unexpected reply {head[:40]!r}")

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.settimeout(timeout)
        c.connect(sock_path)
        c.sendall(req)
        with c.makefile("rb") as f:
            return reply(f)


def stop_group(p, grace=8):
    """Stops a process started in a session of its own (start_new_session),
    and everything in its process group, by its pid."""
    if p is None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5)):
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue


class PeerServer:
    """One peer (tests/bench/peers/PEER.js, in S.peer_workers Node
    processes) and its own redis-server: appendonly yes, appendfsync always,
    no snapshots, its files under the state directory, a unix socket."""

    idemctl = None          # no /metrics: WrkCase settles it by Redis instead

    def __init__(self, name, peer, latency_ms):
        self.name = name
        self.peer = peer
        self.latency_ms = latency_ms
        self.root = os.path.join(S.run_dir, name)
        os.makedirs(os.path.join(self.root, "redis"))
        self.port = free_port()
        self.sock = os.path.join(self.root, "redis.sock")
        self.keys = os.path.join(self.root, "keys")
        with open(self.keys, "w") as f:
            for acct, sec in S.secrets.items():
                f.write(f"{acct} {hashlib.sha256(sec.encode()).hexdigest()}\n")
        self.logs = [os.path.join(self.root, "redis.log"),
                     os.path.join(self.root, "node.log")]
        self.redis = self.node = None
        INSTANCES.append(self)

    def log_tail(self):
        return "\n".join(t for t in (tail(p) for p in self.logs) if t)

    def start(self):
        argv = ["redis-server", "--port", "0", "--unixsocket", self.sock,
                "--unixsocketperm", "700", "--dir", os.path.join(self.root, "redis"),
                "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                "--daemonize", "no", "--logfile", self.logs[0]]
        self.redis = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      cwd=self.root, start_new_session=True)
        end = time.monotonic() + 15
        while True:
            if self.redis.poll() is not None:
                raise RuntimeError(f"{self.name}: redis-server exited "
                                   f"{self.redis.returncode}\n" + self.log_tail())
            try:
                if redis_call(self.sock, "PING") == "PONG":
                    break
            except (OSError, RuntimeError):
                pass
            if time.monotonic() > end:
                raise RuntimeError(f"{self.name}: redis-server does not answer\n"
                                   + self.log_tail())
            time.sleep(0.05)
        got = redis_call(self.sock, "CONFIG", "GET", "appendfsync")
        if got != ["appendfsync", "always"]:
            raise RuntimeError(f"{self.name}: redis-server is not at appendfsync always")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C",
               "NODE_ENV": "production", "PEER_PORT": str(self.port),
               "PEER_REDIS_SOCKET": self.sock, "PEER_KEYS_FILE": self.keys,
               "PEER_PROVIDER_LATENCY_MS": str(self.latency_ms),
               "PEER_WORKERS": str(S.peer_workers)}
        with open(self.logs[1], "ab") as out:
            self.node = subprocess.Popen(
                ["node", os.path.join(PEERS_DIR, f"{self.peer}.js")],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                cwd=PEERS_DIR, env=env, start_new_session=True)
        end = time.monotonic() + 20
        last = "no answer"
        while time.monotonic() < end:
            if self.node.poll() is not None:
                raise RuntimeError(f"{self.name}: node exited {self.node.returncode}\n"
                                   + self.log_tail())
            try:
                st, _, body = http_call(self.port, "GET", "/healthz", timeout=2)
                if st == 200:
                    return
                last = f"{st} {body[:120]!r}"
            except (OSError, http.client.HTTPException) as e:
                last = repr(e)
            time.sleep(0.05)
        raise RuntimeError(f"{self.name}: GET /healthz not 200 ({last})\n" + self.log_tail())

    def commands(self):
        info = redis_call(self.sock, "INFO", "stats") or ""
        m = re.search(r"^total_commands_processed:(\d+)", info, re.M)
        return int(m.group(1)) if m else 0

    def settle(self, limit=40):
        """Waits until the requests wrk left in flight are answered: for
        half a second Redis runs no command but our own INFO."""
        end = time.monotonic() + limit
        try:
            last = self.commands()
            still_since = time.monotonic()
            while time.monotonic() < end:
                time.sleep(0.1)
                now = self.commands()
                if now - last > 1:
                    still_since = time.monotonic()
                elif time.monotonic() - still_since >= 0.5:
                    return
                last = now
        except (OSError, RuntimeError):
            return
        say(f"{self.name}: still answering after {limit} s")

    def stop(self):
        p, self.node = self.node, None
        stop_group(p)
        p, self.redis = self.redis, None
        stop_group(p)


def check_peer(server):
    """Asks the peer once per case shape, as the bench will: a fresh key
    is a 201 with a payment, the same key again the same body, no key a
    400.  Leaves "bench-replay" stored for the replay case.  PeerBroken
    says what was wrong."""
    headers = {"Authorization": f"Bearer {S.secrets[ACCOUNT]}",
               "Content-Type": "application/json"}
    def post(key):
        h = dict(headers)
        if key is not None:
            h["Idempotency-Key"] = f'"{key}"'
        try:
            return http_call(server.port, "POST", "/payments", BODY.encode(), h)
        except (OSError, http.client.HTTPException) as e:
            raise PeerBroken(f"{server.name}: POST /payments: {e!r}") from None
    st, _, body = post("bench-replay")
    try:
        pay = json.loads(body)
    except ValueError:
        pay = None
    if st != 201 or not isinstance(pay, dict) or not str(pay.get("id", "")) or \
            pay.get("amount") != 100 or pay.get("currency") != "BRL" or \
            pay.get("status") != "succeeded":
        raise PeerBroken(f"{server.name}: a fresh payment answered {st} "
                         f"{body[:200]!r}, not 201 with the payment")
    # The first answer may be stored just after it is sent (express-
    # idempotency stores it once sent): while the key is in progress (409),
    # ask again, for at most 5 s.
    end = time.monotonic() + 5
    while True:
        st2, _, again = post("bench-replay")
        if st2 != 409 or time.monotonic() > end:
            break
        time.sleep(0.05)
    if st2 != 201 or again != body:
        raise PeerBroken(f"{server.name}: the same key again answered {st2} "
                         f"{again[:200]!r}, not the stored 201 {body[:200]!r}")
    st3, _, other = post(f"bench-check-{secrets.token_hex(6)}")
    try:
        other_id = json.loads(other).get("id")
    except (ValueError, AttributeError):
        other_id = None
    if st3 != 201 or other_id in (None, pay["id"]):
        raise PeerBroken(f"{server.name}: another key answered {st3} {other[:200]!r}, "
                         "not a new payment")
    st4, _, nokey = post(None)
    if st4 != 400:
        raise PeerBroken(f"{server.name}: a payment without Idempotency-Key answered "
                         f"{st4} {nokey[:200]!r}, not 400")


def peer_versions():
    """{package: version} from the lockfile."""
    with open(os.path.join(PEERS_DIR, "package-lock.json")) as f:
        lock = json.load(f)
    return {k[len("node_modules/"):]: v.get("version", "?")
            for k, v in lock.get("packages", {}).items()
            if k.startswith("node_modules/") and "/node_modules/" not in k[13:]}


def prepare_peers():
    """npm ci in tests/bench/peers/; False (with a note saying why) when
    the peers cannot run, so that the bench runs without them."""
    if not S.peers:
        S.notes.append("The Node.js peers were not run (BENCH_PEERS=0).")
        return False
    missing = [t for t in ("node", "npm", "redis-server") if shutil.which(t) is None]
    if missing:
        msg = f"The Node.js peers were not run: {', '.join(missing)} not found."
        say(msg)
        S.notes.append(msg)
        return False
    say("npm ci in tests/bench/peers")
    try:
        p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=PEERS_DIR,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=600)
        out = " ".join((p.stdout + p.stderr).split())
        why = None if p.returncode == 0 else f"exit {p.returncode}: {out[:300]}"
    except (OSError, subprocess.TimeoutExpired) as e:
        why = repr(e)
    if why:
        msg = ("The Node.js peers were not run: npm ci in tests/bench/peers "
               f"failed (no network to the npm registry?): {why}")
        say(msg)
        S.notes.append(msg)
        return False
    S.peer_versions = peer_versions()
    v = subprocess.run(["node", "-v"], capture_output=True, text=True)
    r = subprocess.run(["redis-server", "--version"], capture_output=True, text=True)
    m = re.search(r"v=(\S+)", r.stdout)
    S.peer_runtime = f"Node.js {v.stdout.strip()}, Redis {m.group(1) if m else '?'}"
    return True


def peer_servers():
    """Both peers, each at provider latency 0 and at S.latency_ms, started
    and checked; the bench stops (SystemExit) if one answers wrongly."""
    out = {}
    for peer, _ in PEERS:
        for sfx, lat in (("", 0), ("-lat", S.latency_ms)):
            srv = PeerServer(f"peer-{peer}{sfx}", peer, lat)
            try:
                srv.start()
            except (RuntimeError, OSError) as e:
                sys.exit(f"bench: STOPPED: peer {peer} did not start (BENCH_PEERS=0 "
                         f"runs without the peers): {str(e).strip()}")
            try:
                check_peer(srv)
            except PeerBroken as e:
                sys.exit(f"bench: STOPPED: peer {peer} failed its functional check "
                         f"(fresh 201, same key the same body, no key 400), so its "
                         f"figures would mean nothing: {e}\n" + srv.log_tail())
            out[srv.name] = srv
    say("peers answer their functional check: " + ", ".join(sorted(out)))
    # Node compiles its hot paths as they run: a warm-up of fresh payments
    # on each instance, so that no round measures a cold one.
    for srv in out.values():
        r, _ = wrk(srv, S.connections, PEER_WARMUP_S, "keys.lua",
                   [f"auth={S.secrets[ACCOUNT]}", "mode=fresh", f"body={BODY}",
                    f"prefix={S.runid}warm"])
        srv.settle()
        if r["bad"] or r["sockerr"]:
            sys.exit(f"bench: STOPPED: peer {srv.name}'s warm-up had {r['bad']} non-2xx "
                     f"answers and {r['sockerr']} socket errors\n" + srv.log_tail())
    return out


def peer_cases(servers):
    """Each peer's cases, in idem's shapes (PEER_SHAPES)."""
    auth = f"auth={S.secrets[ACCOUNT]}"
    c, lc = S.connections, S.lat_connections
    fresh = [auth, "mode=fresh", f"body={BODY}"]
    out = []
    for peer, _ in PEERS:
        srv, lat = servers[f"peer-{peer}"], servers[f"peer-{peer}-lat"]
        cases = [
            WrkCase(f"{peer}-replay", f"{peer} replay", srv, c, "fixed.lua",
                    ["method=POST", "path=/payments", auth, "key=bench-replay",
                     f"body={BODY}"]),
            WrkCase(f"{peer}-fresh", f"{peer} fresh, latency 0", srv, c,
                    "keys.lua", fresh, fresh=True),
            WrkCase(f"{peer}-fresh-wide", f"{peer} fresh, latency 0", srv, lc,
                    "keys.lua", fresh, fresh=True),
            WrkCase(f"{peer}-fresh-lat", f"{peer} fresh, latency {S.latency_ms} ms",
                    lat, lc, "keys.lua", fresh, fresh=True),
        ]
        for x in cases:
            x.group = "peers"
            x.shape = x.name[len(peer) + 1:]
        out += cases
    if S.cases:
        out = [x for x in out if x.name in S.cases or x.shape in S.cases]
    return out


def beside_peers(cases, peer_list):
    """cases with each peer case right after the idem case of its shape."""
    out = []
    for c in cases:
        out.append(c)
        out += [p for p in peer_list if p.shape == c.name]
    placed = {id(x) for x in out}
    return out + [p for p in peer_list if id(p) not in placed]


# ---------------------------------------------------------------- wrk

def wrk_argv(server, conns, seconds, script, args, path="/"):
    return ["wrk", "-t", str(S.wrk_threads_for(conns)), "-c", str(conns),
            "-d", f"{seconds}s", "--timeout", f"{S.timeout}s",
            "-s", os.path.join(HERE, script), f"http://{HOST}:{server.port}{path}",
            "--"] + args


def wrk(server, conns, seconds, script, args, path="/"):
    """Runs wrk once; returns (result dict, command line)."""
    argv = wrk_argv(server, conns, seconds, script, args, path)
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=seconds + S.timeout + 30)
    return parse_wrk(p, argv), argv


def parse_wrk(p, argv):
    out = p.stdout.decode("utf-8", "replace")
    m = re.search(r"^WRK-JSON (\{.*\})$", out, re.M)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"wrk failed ({p.returncode}): {' '.join(argv)}\n{out}\n"
                           + p.stderr.decode("utf-8", "replace"))
    r = json.loads(m.group(1))
    secs = r["duration_us"] / 1e6
    r["rps"] = r["requests"] / secs if secs > 0 else 0.0
    e = r["errors"]
    r["bad"] = e["status"]
    r["sockerr"] = e["connect"] + e["read"] + e["write"] + e["timeout"]
    return r


def show_argv(argv):
    """A command line as it can be pasted, secrets masked."""
    out = []
    for a in argv:
        a = re.sub(r"(auth=)\S+", r"\1$SECRET", a)
        a = re.sub(r"^(auths=)\S+", lambda m: m.group(1) +
                   f"$SECRET_1,...,$SECRET_{len(m.group(0).split(','))}", a)
        a = re.sub(r"^(prefix=)\S+", r"\1$ROUND", a) if "mode=fresh" in argv else a
        a = a.replace(REPO + "/", "")
        out.append(a if re.fullmatch(r"[\w@%+=:,./$-]+", a) else "'" + a + "'")
    return " ".join(out)


# ---------------------------------------------------------------- cases

class Case:
    """One measurement, run once per round."""
    kind = "http"
    group = "main"          # or "cluster": the report's section

    def __init__(self, name, label):
        self.name = name
        self.label = label
        self.results = []       # one dict per round
        self.argv = None
        self.failures = []
        self.unsupported = False

    def run(self, rnd):
        raise NotImplementedError


# The store's counters a fresh case reads from /metrics before and after.
STORE_COUNTERS = {"syncs": "idem_store_syncs_total",
                  "commits": "idem_store_commits_total",
                  "writes": "idem_store_writes_total",
                  "commit_s": "idem_store_commit_seconds_total",
                  "wait_s": "idem_store_write_wait_seconds_total",
                  "stmts": "idem_store_statements_total",
                  "trips": "idem_store_round_trips_total"}


def cpu_seconds(pids):
    """User and system CPU seconds the processes pids have used (those
    gone since count nothing)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / tick


def pg_backends():
    """The pids of the cluster's PostgreSQL server processes (the
    postmaster, whose pid heads postmaster.pid, and its children)."""
    c = getattr(S, "cluster_obj", None)
    if c is None or c.pg is None:
        return []
    try:
        with open(os.path.join(c.pg.data, "postmaster.pid")) as f:
            master = int(f.readline())
    except (OSError, ValueError):
        return []
    out = [master]
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == master:
            out.append(int(d))
    return out


class WrkCase(Case):
    def __init__(self, name, label, server, conns, script, args, path="/", fresh=False):
        super().__init__(name, label)
        self.server = server
        self.conns = conns
        self.script = script
        self.args = args
        self.path = path
        self.fresh = fresh
        self.syncs = []         # (store syncs, claims) per round, fresh cases

    def run(self, rnd):
        args = list(self.args)
        if self.fresh:
            args.append(f"prefix={S.runid}r{rnd}{self.name}")
        before = self.server.metrics() if self.server.idemctl else None
        cpu = self.group == "cluster" and self.fresh
        if cpu:
            workers, backends = self.server.workers(), pg_backends()
            cpu0 = (cpu_seconds(workers), cpu_seconds(backends))
        r, self.argv = wrk(self.server, self.conns, S.seconds, self.script, args,
                           self.path)
        if isinstance(self.server, PeerServer):
            self.server.settle()
        if self.server.idemctl:
            after = self.server.settle()
            if cpu:
                r["cpu_idem_s"] = cpu_seconds(workers) - cpu0[0]
                r["cpu_pg_s"] = cpu_seconds(backends) - cpu0[1]
            if before and after:
                r["claims"] = after.get("idem_claims_total", 0) - \
                    before.get("idem_claims_total", 0)
                for k, name in STORE_COUNTERS.items():
                    if name in after:
                        r[k] = after[name] - before.get(name, 0)
        return r


class SplitWrkCase(WrkCase):
    """One load split across several hosts: a wrk for each, all at once,
    each with its share of the connections.  req/s is their sum; the
    latency percentiles are the slowest host's."""
    group = "cluster"

    def __init__(self, name, label, servers, conns, script, args, fresh=False):
        super().__init__(name, label, servers[0], conns, script, args, fresh=fresh)
        self.servers = servers

    def run(self, rnd):
        n = len(self.servers)
        procs = []
        for i, srv in enumerate(self.servers):
            args = list(self.args)
            if self.fresh:
                args.append(f"prefix={S.runid}r{rnd}{self.name}h{i}")
            conns = self.conns // n + (1 if i < self.conns % n else 0)
            argv = wrk_argv(srv, conns, S.seconds, self.script, args, self.path)
            procs.append((argv, subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)))
        parts = []
        for argv, p in procs:
            try:
                out, err = p.communicate(timeout=S.seconds + S.timeout + 30)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            parts.append(parse_wrk(subprocess.CompletedProcess(
                argv, p.returncode, out, err), argv))
        self.argv = procs[0][0]
        for srv in self.servers:
            srv.settle()
        r = {"requests": sum(x["requests"] for x in parts),
             "rps": sum(x["rps"] for x in parts),
             "bad": sum(x["bad"] for x in parts),
             "sockerr": sum(x["sockerr"] for x in parts),
             "latency_us": {k: max(x["latency_us"][k] for x in parts)
                            for k in parts[0]["latency_us"]},
             "hosts": [round(x["rps"]) for x in parts]}
        return r


class StoreCase(Case):
    kind = "store"

    def __init__(self, name, label, argv, threads):
        super().__init__(name, label)
        self.base = argv + ["-t", str(threads)]
        self.threads = threads

    def run(self, rnd):
        d = tempfile.mkdtemp(prefix=f"{self.name}-", dir=S.scratch)
        try:
            argv = [S.store_bench] + self.base + ["-d", d, "-T", str(S.store_seconds)]
            self.argv = [os.path.basename(S.store_bench)] + self.base + \
                ["-d", "DIR", "-T", str(S.store_seconds)]
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=S.store_seconds + 120)
            if p.returncode != 0:
                msg = p.stderr.decode("utf-8", "replace").strip()
                # Status 3: the store cannot run this way (yet), not a failure.
                self.unsupported = p.returncode == 3
                raise RuntimeError(msg or f"exit status {p.returncode}")
            r = json.loads(p.stdout.decode().strip().splitlines()[-1])
            r["rps"] = r["keys_per_s"]
            return r
        finally:
            shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- set-up

def fill(keys, prefix, expired=False, answer=None, location=None):
    """Writes keys completed records with store_bench fill where syncing is
    cheap (a tmpfs), then returns the path of the data file to copy."""
    d = tempfile.mkdtemp(prefix="fill-", dir=S.fill_root)
    argv = [S.store_bench, "fill", "-d", d, "-n", str(keys), "-S", ACCOUNT,
            "-p", prefix, "-B", BODY, "-f", S.fp_mode]
    if expired:
        argv.append("-x")
    if answer is not None:
        argv += ["-R", answer, "-L", location]
    S.fill_argv.append(show_argv(["store_bench"] + argv[1:3] + ["DIR"] + argv[4:])
                       .replace(answer or "\0", "ANSWER"))
    t0 = time.monotonic()
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=3600)
    if p.returncode != 0:
        raise RuntimeError("store_bench fill: " + p.stderr.decode("utf-8", "replace"))
    size = os.path.getsize(os.path.join(d, "data.mdb"))
    say(f"filled {keys:,} {'expired ' if expired else ''}keys in "
        f"{time.monotonic() - t0:.1f} s ({size / 1e6:,.0f} MB)")
    return d, size, time.monotonic() - t0


def first_payment(server):
    """One payment with a fixed key: replayed by the replay cases; its id is
    fetched by the GET case, and its answer is what the fills store."""
    headers = {"Authorization": f"Bearer {S.secrets[ACCOUNT]}",
               "Content-Type": "application/json",
               "Idempotency-Key": '"bench-replay"'}
    st, h, body = http_call(server.port, "POST", "/payments", BODY.encode(), headers)
    if st != 201:
        raise RuntimeError(f"first payment: {st} {body[:200]!r}\n" + server.log_tail())
    loc = h.get("Location") or h.get("location")
    st, _, again = http_call(server.port, "POST", "/payments", BODY.encode(), headers)
    if st != 201 or again != body:
        raise RuntimeError(f"replay of the first payment: {st} {again[:200]!r}")
    return loc, body.decode()


# ---------------------------------------------------------------- a long list

PAGE_CASES = ("pages-first", "pages-after", "pages-before", "pages-none")


def want_pages():
    """Whether the long list's cases run: BENCH_PAGES, and BENCH_CASES
    naming one of them or "pages" when it names any."""
    return S.pages and (not S.cases or any(n in S.cases
                                           for n in PAGE_CASES + ("pages",)))


class PageCase(WrkCase):
    """One GET /payments of the long list, a request at a time; expect is
    the status every answer must have (a 400 is counted as refused, not
    as a non-2xx)."""
    group = "pages"

    def __init__(self, name, label, server, path, expect, want, more):
        super().__init__(name, label, server, 1, "fixed.lua",
                         ["method=GET", f"path={path}",
                          f"auth={S.secrets[ACCOUNT]}"])
        self.query = path
        self.expect = expect
        self.want = want            # the page's ids, newest first
        self.more = more            # its has_more

    def check(self):
        """One request, its answer compared with the page the list holds."""
        st, _, body = http_call(self.server.port, "GET", self.query, headers={
            "Authorization": f"Bearer {S.secrets[ACCOUNT]}"})
        if st != self.expect:
            raise RuntimeError(f"{self.name}: GET {self.query}: {st}, not "
                               f"{self.expect}: {body[:300]!r}\n"
                               + self.server.log_tail())
        if st != 200:
            return
        doc = json.loads(body)
        got = [p.get("id") for p in doc.get("data", [])]
        if got != self.want or doc.get("has_more") is not self.more:
            raise RuntimeError(
                f"{self.name}: GET {self.query}: {len(got)} payments "
                f"from {got[:1]} to {got[-1:]}, has_more {doc.get('has_more')}; "
                f"expected {len(self.want)} from {self.want[:1]} to "
                f"{self.want[-1:]}, has_more {self.more}")

    def run(self, rnd):
        r = super().run(rnd)
        if self.expect >= 400:
            if r["bad"] != r["requests"]:
                raise RuntimeError(f"{r['requests'] - r['bad']} of "
                                   f"{r['requests']} answers were not "
                                   f"{self.expect}")
            r["refused"], r["bad"] = r["bad"], 0
        return r


def pages_server(idem, ctx):
    """An instance whose store holds one account's S.page_payments payments,
    written by store_bench payments sealed as the instance seals (its
    IDEM_SECRET_FILE), or in the clear when it has none; the server, not
    started, and the payments' ids, newest first."""
    srv = Server("idem-pages", idem, {"IDEM_PROVIDER_LATENCY_MS": "0"})
    key = srv.env.get("IDEM_SECRET_FILE", "")
    d = tempfile.mkdtemp(prefix="pages-", dir=S.fill_root)
    ids_path = os.path.join(d, "ids")
    n = S.page_payments
    argv = [S.store_bench, "payments", "-d", d, "-n", str(n), "-S", ACCOUNT,
            "-o", ids_path] + (["-k", key] if key else [])
    S.fill_argv.append(f"store_bench payments -d DIR -n {n} -S {ACCOUNT} -o IDS"
                       + (" -k KEYFILE (the instance's IDEM_SECRET_FILE)"
                          if key else ""))
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=3600)
        if p.returncode != 0:
            raise RuntimeError("store_bench payments: "
                               + p.stderr.decode("utf-8", "replace"))
        secs = time.monotonic() - t0
        size = os.path.getsize(os.path.join(d, "data.mdb"))
        with open(ids_path) as f:
            ids = f.read().split()
        srv.put_state_file(os.path.join(d, "data.mdb"), "data.mdb")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if len(ids) != n:
        raise RuntimeError(f"store_bench payments: {len(ids)} ids, not {n}")
    ctx["pages_fill"] = (f"{size / 1e6:,.0f} MB written in {secs:.1f} s, "
                         + ("sealed under the instance's key file" if key else
                            "in the clear (`IDEM_SECRET_FILE=` set)"))
    say(f"wrote {n:,} payments of one account in {secs:.1f} s "
        f"({size / 1e6:,.0f} MB, {'sealed' if key else 'in the clear'})")
    return srv, ids


def page_cases(srv, ids):
    """The first page, the last page by starting_after, the page before it
    by ending_before, and a cursor that names no payment."""
    n = len(ids)
    at = lambda i: f"{i + 1:,}"          # positions counted from 1, newest first
    page_no = lambda first: (f" (page {first // PAGE + 1:,})"
                             if first % PAGE == 0 else "")
    base = f"/payments?limit={PAGE}"
    after, before = ids[n - PAGE - 1], ids[n - PAGE]
    cases = [
        PageCase("pages-first", f"first page: `limit={PAGE}`", srv, base, 200,
                 ids[:PAGE], True),
        PageCase("pages-after", f"`starting_after` payment {at(n - PAGE - 1)}: "
                 f"payments {at(n - PAGE)}–{at(n - 1)}{page_no(n - PAGE)}",
                 srv, f"{base}&starting_after={after}", 200, ids[n - PAGE:], False),
        PageCase("pages-before", f"`ending_before` payment {at(n - PAGE)}: "
                 f"payments {at(n - 2 * PAGE)}–{at(n - PAGE - 1)}"
                 f"{page_no(n - 2 * PAGE)}", srv,
                 f"{base}&ending_before={before}", 200,
                 ids[n - 2 * PAGE:n - PAGE], True),
        PageCase("pages-none", "`starting_after` naming no payment", srv,
                 f"{base}&starting_after={NO_PAYMENT}", 400, None, None),
    ]
    return [c for c in cases
            if not S.cases or c.name in S.cases or "pages" in S.cases]


def pages_setup(idem, servers, ctx):
    """The long list's instance, filled, started and asked once as each
    case will ask it (a wrong page stops the bench, so that a broken list
    never shows as a fast one); its cases."""
    try:
        srv, ids = pages_server(idem, ctx)
        servers["idem-pages"] = srv
        srv.start()
        cases = page_cases(srv, ids)
        for c in cases:
            c.check()
    except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as e:
        sys.exit(f"bench: STOPPED: the long list's instance failed its check "
                 f"(BENCH_PAGES=0 runs without it): {str(e).strip()}")
    say("the long list's pages answer their check: "
        + ", ".join(c.name for c in cases))
    return cases


def pages_lines(cases, ctx):
    """The section's text: what ran, the table, the first page beside the
    deep ones."""
    pc = [c for c in cases if c.group == "pages"]
    if not pc:
        return ["Not run (BENCH_PAGES=0, or BENCH_CASES named none of "
                + ", ".join(PAGE_CASES) + ")."]
    p50 = lambda c: med([r["latency_us"]["p50"] for r in c.results])
    first = next((c for c in pc if c.name == "pages-first"), None)
    base = p50(first) if first else None
    out = [f"`GET /payments` of one account holding {S.page_payments:,} payments "
           f"({ctx.get('pages_fill', '?')}; `store_bench payments` writes each "
           "payment's row and index entry as `POST /payments` does, a millisecond "
           f"apart), {PAGE} a page, on one connection: one request at a time, so "
           "p50 is a page's time through lighttpd and a worker, with no queue. "
           "Positions count from the newest payment, 1. Each page's answer was "
           f"checked once before the rounds; {S.seconds} s per case per round.",
           "",
           "| request | status | p50 ms median (min–max) | p99 ms | req/s | "
           "p50 vs first page |",
           "|---|---:|---|---:|---:|---:|"]
    for c in pc:
        if not c.results:
            out.append(f"| {c.label} | {c.expect} | failed | | | |")
            continue
        vals = [r["latency_us"]["p50"] / 1000 for r in c.results]
        p99 = med([r["latency_us"]["p99"] for r in c.results])
        rps = med([r["rps"] for r in c.results])
        ratio = f"{p50(c) / base:.2f}" if base and p50(c) else "n/a"
        out.append(f"| {c.label} | {c.expect} | {median_range(vals, '{:.3f}')} | "
                   f"{p99 / 1000:.3f} | {rps:,.0f} | {ratio} |")
    for c in pc:
        for f in c.failures:
            out.append(f"\n- {c.name}: {f}")
    deep = [c for c in pc if c.name in ("pages-after", "pages-before") and c.results]
    if base and deep:
        worst = max(p50(c) / base for c in deep)
        out += ["", f"The deep pages' p50 is at most {worst:.2f}× the first "
                f"page's: {'within' if worst <= 2 else 'outside'} the bar of "
                "2× (a page costs its own size, wherever it lies)."]
    return out


def pages_section(cases, ctx, w):
    w("## Pages of a long list: the first and the deepest")
    w("")
    for line in pages_lines(cases, ctx):
        w(line)
    w("")


def write_part_report(path, ctx, part, section):
    """The report of --only PART: the head, section(w)'s lines and the
    run's notes."""
    L = []
    w = L.append
    report_head(ctx, w)
    w(f"Only this part was run (--only {part}).")
    w("")
    section(w)
    if ctx["notes"]:
        w("## Notes from this run")
        w("")
        for n in ctx["notes"]:
            w(f"- {n}")
        w("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def machine():
    info = {"nproc": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M)
            info["cpu"] = m.group(1).strip() if m else platform.processor()
    except OSError:
        info["cpu"] = platform.processor()
    with open("/proc/meminfo") as f:
        m = re.search(r"^MemTotal:\s*(\d+) kB", f.read(), re.M)
        info["mem"] = f"{int(m.group(1)) / 1024 / 1024:.1f} GiB" if m else "?"
    info["kernel"] = platform.release()
    info["os"] = "?"
    try:
        with open("/etc/os-release") as f:
            m = re.search(r'^PRETTY_NAME="?([^"\n]*)', f.read(), re.M)
            info["os"] = m.group(1) if m else "?"
    except OSError:
        pass
    mnt, fstype, dev = mount_of(S.state_root)
    info["fs"] = f"{fstype} ({dev} on {mnt})"
    mnt, fstype, dev = mount_of(S.fill_root)
    info["fillfs"] = f"{fstype} ({dev} on {mnt})"
    versions = []
    for pkg in ("lighttpd", "spawn-fcgi", "wrk", "libfcgi0ldbl", "liblmdb0",
                "libsqlite3-0", "libsodium23", "gcc"):
        p = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg],
                           capture_output=True)
        if p.returncode == 0 and p.stdout:
            versions.append(f"{pkg} {p.stdout.decode()}")
    info["versions"] = ", ".join(versions)
    return info


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def commit():
    def git(*a):
        p = subprocess.run(["git", "-C", REPO] + list(a), capture_output=True)
        return p.stdout.decode().strip() if p.returncode == 0 else ""
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = [ln for ln in git("status", "--porcelain").splitlines()
             if not ln[3:].startswith("BENCHMARKS.md")]
    return head, bool(dirty), git("log", "-1", "--format=%s")


def build_flags():
    try:
        with open(os.path.join(S.build, "Makefile")) as f:
            text = f.read()
    except OSError:
        return "?"
    flags = {}
    for k in ("CFLAGS", "SAN_CFLAGS", "DEFS"):
        m = re.search(rf"^{k} = (.*)$", text, re.M)
        flags[k] = m.group(1).strip() if m else ""
    fp = "IDEM_FAULT_POINTS" in flags["DEFS"]
    if not fp:
        try:
            with open(os.path.join(S.build, "config.h")) as f:
                fp = re.search(r"^#define IDEM_FAULT_POINTS", f.read(), re.M) is not None
        except OSError:
            pass
    return (f"CFLAGS={flags['CFLAGS'] or '(none)'}; sanitizers: "
            f"{flags['SAN_CFLAGS'] or 'none'}; fault points: {'on' if fp else 'off'}")


# ---------------------------------------------------------------- flushes

def trace_syncs(server):
    """Without the counter: strace on every worker during a short fresh run.
    Returns {file class: syncs} and the claims made, or None."""
    if shutil.which("strace") is None:
        return None, "strace is not installed"
    pids = server.workers()
    out = os.path.join(S.run_dir, "strace.out")
    argv = ["strace", "-f", "-qq", "-o", out,
            "-e", "trace=fdatasync,fsync,msync,pwrite64,pwritev,sync_file_range"]
    for pid in pids:
        argv += ["-p", str(pid)]
    before = server.metrics()
    st = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, start_new_session=True)
    try:
        time.sleep(1)
        if st.poll() is not None:
            return None, "strace: " + st.stderr.read().decode("utf-8", "replace")[-200:]
        wrk(server, S.connections, S.strace_seconds, "keys.lua",
            [f"auth={S.secrets[ACCOUNT]}", "mode=fresh", f"body={BODY}",
             f"prefix={S.runid}strace"], "/")
        after = server.settle()
    finally:
        os.kill(st.pid, signal.SIGINT)
        try:
            st.wait(timeout=20)
        except subprocess.TimeoutExpired:
            st.kill()
            st.wait()
    # Which descriptor is which file, and which were opened O_DSYNC/O_SYNC
    # (LMDB writes its meta page through such a descriptor: a sync each).
    fds = {}
    for pid in pids:
        try:
            names = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in names:
            try:
                path = os.readlink(f"/proc/{pid}/fd/{fd}")
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    flags = int(re.search(r"^flags:\s*([0-7]+)", f.read(), re.M).group(1), 8)
            except (OSError, AttributeError):
                continue
            fds[(pid, int(fd))] = (path, bool(flags & 0o4010000 or flags & 0o10000))
    tid_to_pid = {}
    for pid in pids:
        try:
            for t in os.listdir(f"/proc/{pid}/task"):
                tid_to_pid[int(t)] = pid
        except OSError:
            pass
    counts = {}
    with open(out, errors="replace") as f:
        for line in f:
            m = re.match(r"^(\d+)\s+(\w+)\((\d+)?", line)
            if not m:
                continue
            tid, call, fd = int(m.group(1)), m.group(2), m.group(3)
            pid = tid_to_pid.get(tid, tid)
            path, dsync = fds.get((pid, int(fd)), ("?", False)) if fd else ("?", False)
            if call.startswith("pwrite") and not dsync:
                continue
            where = ("store" if path.startswith(server.db + "/") else
                     "provider ledger" if path.startswith(os.path.join(server.state, "provider"))
                     else "other")
            counts[where] = counts.get(where, 0) + 1
    claims = (after or {}).get("idem_claims_total", 0) - (before or {}).get("idem_claims_total", 0)
    return (counts, claims), None


# ---------------------------------------------------------------- memory

def memory(server):
    rows = []
    for pid in server.workers():
        vals = {}
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                text = f.read()
        except OSError:
            continue
        for k in ("Rss", "Pss", "Private_Clean", "Private_Dirty"):
            m = re.search(rf"^{k}:\s*(\d+) kB", text, re.M)
            vals[k] = int(m.group(1)) if m else 0
        vals["Private"] = vals["Private_Clean"] + vals["Private_Dirty"]
        rows.append(vals)
    return rows


# ---------------------------------------------------------------- purge

def purge_run(server):
    """Fresh payments for a while, then the same with idemctl purge running."""
    res = {}
    args = [f"auth={S.secrets[ACCOUNT]}", "mode=fresh", f"body={BODY}"]
    base, _ = wrk(server, S.connections, S.seconds, "keys.lua",
                  args + [f"prefix={S.runid}pb"])
    server.settle()
    res["baseline"] = base
    limit = S.purge_limit
    argv = ["wrk", "-t", str(S.wrk_threads_for(S.connections)), "-c", str(S.connections),
            "-d", f"{limit + 60}s", "--timeout", f"{S.timeout}s",
            "-s", os.path.join(HERE, "keys.lua"), f"http://{HOST}:{server.port}/",
            "--"] + args + [f"prefix={S.runid}pp"]
    load = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        time.sleep(2)
        ctl = [server.idemctl, "purge"]
        if S.purge_batch:
            ctl += ["-n", str(S.purge_batch)]
        res["command"] = "IDEM_DB_DIR=... idemctl purge" + \
            (f" -n {S.purge_batch}" if S.purge_batch else "")
        t0 = time.monotonic()
        try:
            p = subprocess.run(ctl, stdin=subprocess.DEVNULL, capture_output=True,
                               env=server.ctl_env(), cwd=server.root, timeout=limit,
                               **server.run_as())
            res["seconds"] = time.monotonic() - t0
            out = p.stdout.decode() + p.stderr.decode()
            m = re.search(r"purged: (\d+)", out)
            res["purged"] = int(m.group(1)) if m else None
            if p.returncode != 0:
                res["error"] = out.strip()[-300:]
        except subprocess.TimeoutExpired:
            res["seconds"] = None
            res["error"] = f"idemctl purge still running after {limit} s: stopped"
        time.sleep(2)
    finally:
        load.send_signal(signal.SIGINT)
        try:
            o, e = load.communicate(timeout=S.timeout + 30)
        except subprocess.TimeoutExpired:
            load.kill()
            o, e = load.communicate()
    p = subprocess.CompletedProcess(argv, 0 if load.returncode in (0, -2) else
                                    load.returncode, o, e)
    res["during"] = parse_wrk(p, argv)
    server.settle()
    return res


# ---------------------------------------------------------------- report

RETRY_RUNS = 5


def retry_run(idem):
    """A client that honours Retry-After (urllib3's Retry: read timeout
    0.3 s, 409/5xx and read errors retried with the same key and body)
    against a provider that takes 1 s: how long until it holds its 201."""
    lines = ["The client: tests/bench/retry_client.py (urllib3 "
             "`Retry(respect_retry_after_header=True)`, read timeout 0.3 s, "
             "read errors, 409, 502, 503 and 504 retried with the same "
             "Idempotency-Key and body). Provider latency 1,000 ms; one "
             "payment at a time.", ""]
    try:
        import urllib3  # noqa: F401 - only to know it is there
    except ImportError:
        return lines + ["Not run: urllib3 is not installed for this python3."]
    server = Server("idem-retry", idem, {"IDEM_PROVIDER_LATENCY_MS": "1000"})
    try:
        server.start()
        p = subprocess.run([sys.executable, os.path.join(HERE, "retry_client.py"),
                            str(server.port), S.secrets[ACCOUNT], str(RETRY_RUNS)],
                           capture_output=True, text=True, timeout=300)
        runs = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as e:
        S.failed.append("retry")
        return lines + [f"Failed: {str(e).strip()[:300]}"]
    finally:
        server.stop()
    if not runs:
        S.failed.append("retry")
        return lines + ["Failed: the client printed nothing."]
    lines += ["| run | status | seconds to the 201 | answers before it |",
              "|---:|---:|---:|---|"]
    for i, r in enumerate(runs, 1):
        hist = ", ".join(str(h) if h is not None else "timeout"
                         for h in r["retries"]) or "none"
        lines.append(f"| {i} | {r['status']} | {r['seconds']:.2f} | {hist} |")
    lines += ["", f"Median: {med([r['seconds'] for r in runs]):.2f} s "
              "(a whole 30 s lease as Retry-After would make it 30.3 s)."]
    return lines


def bare_rps(cases):
    byname = {c.name: c for c in cases}
    return med([r["rps"] for r in byname["bare"].results]) if "bare" in byname else None


def report_head(ctx, w):
    """The title, the machine and build, and the parameters and commands."""
    cases = ctx["cases"]
    head, dirty, subject = ctx["commit"]
    mi = ctx["machine"]
    w("# Benchmarks")
    w("")
    w("Generated by `./quickstart bench` (tests/bench/run.py); do not edit by hand: run "
      "it again on a quiet machine and commit the result. How to read and change it: "
      "tests/bench/README.md.")
    w("")
    w(f"Run of {ctx['date']}, {ctx['elapsed']:.0f} s in all.")
    w("")
    w("## Machine and build")
    w("")
    w("| | |")
    w("|---|---|")
    w(f"| CPU | {mi['cpu']}, nproc {mi['nproc']} |")
    w(f"| memory | {mi['mem']} |")
    w(f"| system | {mi['os']}, kernel {mi['kernel']} |")
    w(f"| state directory | {mi['fs']} |")
    w(f"| fills written on | {mi['fillfs']} (then copied to the state directory) |")
    w(f"| load average | {ctx['load_before']} before, {ctx['load_after']} after |")
    w(f"| commit | `{head}`{' (dirty: uncommitted changes)' if dirty else ''} {subject} |")
    w(f"| build | `{os.path.basename(S.build)}`: {ctx['flags']} |")
    w(f"| versions | {mi['versions']} |")
    w("")
    w("## Parameters")
    w("")
    w(f"- {S.rounds} round{'s' if S.rounds != 1 else ''}; each round runs every case below once, in this order; "
      "figures are the median over rounds with (min–max).")
    w(f"- lighttpd (etc/lighttpd/idem-external.conf) in front of {S.workers} spawn-fcgi "
      f"workers per instance; the same for the bare responder. wrk with "
      f"{S.wrk_threads} threads, {S.seconds} s per case, --timeout {S.timeout}s, on "
      "127.0.0.1; wrk and the servers share the machine's cores.")
    w(f"- Workers' environment: etc/idem.env, then "
      + ", ".join(f"`{k}={v}`" for k, v in sorted(S.bench_env.items()))
      + " (so that fills and long runs fit), then the caller's IDEM_* "
      + ("(" + ", ".join(f"`{k}={v}`" for k, v in sorted(S.user_env.items())) + ")"
         if S.user_env else "(none set)")
      + f"; the provider latency is per case (0, or {S.latency_ms} ms).")
    w("- Commands (secrets and per-round key prefixes shown as $SECRET and $ROUND; "
      "ports are free loopback ports):")
    w("")
    acct = "" if S.account[2] is None else f" -u {S.account[0]} -g {S.account[1]}"
    w(f"      workers: spawn-fcgi -F {S.workers} -s RUN/idem-fcgi.sock -M 0660{acct} "
      "-- idem-fcgi (or bare), stderr to RUN/worker.log")
    w("      server:  lighttpd -D -f RUN/lighttpd.conf (etc/lighttpd/idem-external.conf "
      "with its placeholders filled)")
    for c in cases:
        if c.argv:
            each = " (one such wrk per host, at once)" if hasattr(c, "servers") else ""
            w(f"      {c.name}: {show_argv(c.argv)}{each}")
    for line in ctx["fill_argv"]:
        w(f"      {line}")
    w("")


def write_report(path, ctx):
    cases = ctx["cases"]
    byname = {c.name: c for c in cases}
    bare = bare_rps(cases)
    L = []
    w = L.append
    report_head(ctx, w)
    w("## HTTP: throughput and latency")
    w("")
    w("| case | conns | req/s median (min–max) | p50 ms | p99 ms | max ms | vs bare | non-2xx | socket errors |")
    w("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for c in cases:
        if c.kind != "http" or c.name.startswith("replay-10k") or \
                c.name.startswith("replay-1m") or c.group != "main":
            continue
        w(http_row(c, bare))
    w("")
    w("`vs bare`: the case's median req/s over the bare responder's (the ceiling of "
      "lighttpd + spawn-fcgi + libfcgi on this machine). p50/p99/max: wrk's latency "
      "percentiles, median over rounds. wrk counts only what is answered before its "
      "time is up: with more connections than workers can serve (the latency case), "
      "the requests still queued then are answered before the next case starts but "
      "are in no figure, so p50 and p99 there understate the queueing.")
    for c in cases:
        if c.group == "main":
            for f in c.failures:
                w(f"\n- {c.name}: {f}")
    w("")
    peers_section(cases, w)
    cluster_section(cases, bare, w)
    w("## Flushes per fresh payment")
    w("")
    for line in ctx["flushes"]:
        w(line)
    w("")
    w("## What a request costs the worker")
    w("")
    for line in ctx.get("cost", ["Not run."]):
        w(line)
    w("")
    w("## The store alone: idem's LMDB store vs the reference design on SQLite WAL")
    w("")
    w("Claim, then complete, for fresh keys, one after the other; keys/s is "
      "claim+complete pairs per second "
      f"({S.store_seconds} s per case per round, on the state directory's file system).")
    w("")
    w("| store | threads | keys/s median (min–max) | vs idem's store, 1 thread |")
    w("|---|---:|---|---:|")
    lm = None
    for c in cases:
        if c.kind == "store" and c.name.startswith("store-lmdb"):
            lm = med([r["rps"] for r in c.results])
            break
    for c in cases:
        if c.kind != "store":
            continue
        vals = [r["rps"] for r in c.results]
        m = med(vals)
        ratio = f"{m / lm:.2f}" if m and lm else "n/a"
        if vals:
            w(f"| {c.label} | {c.threads} | {median_range(vals)} | {ratio} |")
        for f in c.failures[:1]:
            w(f"| {c.label} | {c.threads} | failed: {f} | |")
    w("")
    w("SQLite at synchronous=NORMAL in WAL mode does not sync at commit (only at "
      "checkpoints): a power cut may lose acknowledged keys, which idem never allows. "
      "It is shown as the bound of what skipping the sync buys, not as an equal.")
    w("")
    w(f"## Replay with {S.small_keys:,} and with {S.big_keys:,} stored keys")
    w("")
    w(f"Each store filled with `store_bench fill` (completed records holding a copy "
      f"of a real 201 answer; {ctx['fill_small']}; {ctx['fill_big']}), "
      f"{S.connections} connections. The fills are written in the clear, so these "
      f"instances run without a key file (`IDEM_SECRET_FILE=`).")
    w("")
    w(f"| replay of | store | req/s median (min–max) | p50 ms | p99 ms | max ms | vs bare | non-2xx |")
    w("|---|---|---|---:|---:|---:|---:|---:|")
    for kind, label in (("one", "one key"), ("random", "random stored keys")):
        for size, slabel in (("10k", f"{S.small_keys:,} keys"), ("1m", f"{S.big_keys:,} keys")):
            c = byname.get(f"replay-{size}-{kind}")
            if c is None:
                continue
            rps = [r["rps"] for r in c.results]
            lat = lambda k: med([r["latency_us"][k] for r in c.results])
            ratio = f"{med(rps) / bare:.2f}" if bare and rps else "n/a"
            w(f"| {label} | {slabel} | {median_range(rps)} | {ms(lat('p50'))} | "
              f"{ms(lat('p99'))} | {ms(lat('max'))} | {ratio} | "
              f"{sum(r['bad'] for r in c.results)} |")
            for f in c.failures:
                w(f"| {label} | {slabel} | failed: {f} | | | | | |")
    w("")
    pages_section(cases, ctx, w)
    w(f"## Purging {S.purge_keys:,} expired keys while serving")
    w("")
    for line in ctx["purge"]:
        w(line)
    w("")
    w("## A client that honours Retry-After")
    w("")
    for line in ctx["retry"]:
        w(line)
    w("")
    w("## Memory per worker after the runs")
    w("")
    w("Private = Private_Clean + Private_Dirty from /proc/PID/smaps_rollup (pages only "
      "this process maps, LMDB's file pages included when no other process maps them); "
      "Pss shares every page among the processes that map it. Median over the "
      "instance's workers (min–max), KiB.")
    w("")
    w("| instance | workers | Private KiB | Private_Dirty KiB | Pss KiB | Rss KiB |")
    w("|---|---:|---|---|---|---|")
    for name, rows in ctx["memory"]:
        if not rows:
            continue
        col = lambda k: median_range([r[k] for r in rows])
        w(f"| {name} | {len(rows)} | {col('Private')} | {col('Private_Dirty')} | "
          f"{col('Pss')} | {col('Rss')} |")
    w("")
    if ctx["notes"]:
        w("## Notes from this run")
        w("")
        for n in ctx["notes"]:
            w(f"- {n}")
        w("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def good_rps(r):
    """Answers with a 2xx status per second in one round's result."""
    return r["rps"] * (r["requests"] - r["bad"]) / r["requests"] if r["requests"] else 0.0


def fmt_lat(us):
    if us is None:
        return "n/a"
    return f"{us / 1e6:.1f} s" if us >= 1e6 else f"{us / 1000:.0f} ms" \
        if us >= 10_000 else f"{us / 1000:.1f} ms"


def peers_lines(cases):
    """The table of idem beside the Node.js peers, case by case."""
    if not getattr(S, "peers_ran", False):
        return [getattr(S, "peers_why", "Not run.")]
    byname = {c.name: c for c in cases}
    ran = [peer for peer, _ in PEERS
           if any(c.group == "peers" and c.name.startswith(peer + "-") for c in cases)]
    v = S.peer_versions
    stacks = "; ".join(f"**{peer}**: " + ", ".join(f"{p} {v.get(p, '?')}" for p in pkgs)
                       for peer, pkgs in PEERS)
    nproc = S.peer_workers
    lines = [
        "The two idempotency libraries Node.js developers reach for, each behind "
        f"Express {v.get('express', '?')} with that library's Redis adapter "
        f"(tests/bench/peers/, pinned in its package-lock.json; {stacks}); "
        f"{S.peer_runtime}; {nproc} Node process{'es' if nproc != 1 else ''} per "
        f"peer{' (node:cluster)' if nproc > 1 else ''}. Each peer instance has its "
        "own redis-server: `appendonly yes`, `appendfsync always`, no snapshots, "
        "a unix socket, its files in the state directory. Their provider is an "
        "in-memory counter, after the case's latency; idem's figures are its "
        "cases `replay`, `fresh`, `fresh-wide` and `fresh-lat` (its in-process "
        "simulated provider, whose ledger is a durable commit), and, in the row that "
        "says so, the cluster's LMDB host `cluster-lmdb-fresh` below (one host as "
        "`./quickstart serve` runs it: the provider a service over HTTP, 64 accounts "
        "each under the default bound of keys) beside the peers' `fresh`. The same requests (accounts, "
        "keys, bodies: the wrk commands above) in the same rounds, each peer case "
        "right after idem's case of its shape; before the rounds each peer was "
        "checked once (a fresh key 201 with the payment, the same key the same "
        "body, no key 400), then warmed up with "
        f"{PEER_WARMUP_S} s of fresh payments.", "",
        "Figures: answers with a 2xx status per second (median over rounds), and "
        "wrk's p99 (median over rounds); non-2xx answers, when any, in brackets.", "",
        "| case | conns | idem | " + " | ".join(ran) + " | best peer | idem / best peer |",
        "|---|---:|---:|" + "---:|" * len(ran) + "---|---:|"]
    # (idem's case, the peers' case of the same requests, label, connections)
    shapes = (("replay", "replay", "replay (one stored key)", S.connections),
              ("fresh", "fresh", "fresh, provider 0 ms", S.connections),
              ("cluster-lmdb-fresh", "fresh",
               "fresh, provider 0 ms; idem as `./quickstart serve` runs it "
               "(the provider service)", S.connections),
              ("fresh-wide", "fresh-wide", "fresh, provider 0 ms", S.lat_connections),
              ("fresh-lat", "fresh-lat", f"fresh, provider {S.latency_ms} ms",
               S.lat_connections))
    for shape, peer_shape, label, conns in shapes:
        def figs(c):
            if c is None or not c.results:
                return None, "n/a" if c is None else "failed"
            rps = med([good_rps(r) for r in c.results])
            bad = sum(r["bad"] for r in c.results)
            p99 = med([r["latency_us"]["p99"] for r in c.results])
            cell = f"{rps:,.0f}/s, p99 {fmt_lat(p99)}" + (f" ({bad:,} non-2xx)" if bad else "")
            return rps, cell
        idem_rps, idem_cell = figs(byname.get(shape))
        peer_figs = [(peer, *figs(byname.get(f"{peer}-{peer_shape}"))) for peer in ran]
        if shape != peer_shape and shape not in byname:
            continue    # the cluster did not run
        if idem_rps is None and all(f[1] is None for f in peer_figs):
            continue
        best = max((f for f in peer_figs if f[1] is not None), key=lambda f: f[1],
                   default=None)
        ratio = f"**{idem_rps / best[1]:.2f}**" if best and best[1] and idem_rps else "n/a"
        lines.append(f"| {label} | {conns} | {idem_cell} | "
                     + " | ".join(f[2] for f in peer_figs)
                     + f" | {best[0] if best else 'n/a'} | {ratio} |")
    for c in cases:
        if c.group == "peers":
            for f in c.failures:
                lines.append(f"\n- {c.name}: {f}")
    return lines


def peers_section(cases, w):
    w("## Beside the Node.js peers")
    w("")
    for line in peers_lines(cases):
        w(line)
    w("")


def cluster_section(cases, bare, w, first=None):
    w("## A cluster: two hosts on PostgreSQL beside one host on LMDB")
    w("")
    for line in ([first, ""] if first else []) + cluster_lines(cases, bare):
        w(line)
    w("")


def write_cluster_report(path, ctx):
    """The report of --only cluster: the head and the cluster's section."""
    L = []
    w = L.append
    report_head(ctx, w)
    cluster_section(ctx["cases"], bare_rps(ctx["cases"]), w,
                    "Only this part was run (--only cluster), beside the bare "
                    "responder.")
    with open(path, "w") as f:
        f.write("\n".join(L))


def http_row(c, bare):
    if not c.results:
        return f"| {c.label} | {getattr(c, 'conns', '')} | failed | | | | | | |"
    rps = [r["rps"] for r in c.results]
    lat = lambda k: med([r["latency_us"][k] for r in c.results])
    ratio = f"{med(rps) / bare:.2f}" if bare else "n/a"
    return (f"| {c.label} | {c.conns} | {median_range(rps)} | {ms(lat('p50'))} | "
            f"{ms(lat('p99'))} | {ms(lat('max'))} | {ratio} | "
            f"{sum(r['bad'] for r in c.results)} | {sum(r['sockerr'] for r in c.results)} |")


# ---------------------------------------------------------------- main

COST_CASES = ("replay", "fresh")
COST_SYSCALLS = ("futex", "getrandom", "pwrite64", "writev", "fdatasync", "accept",
                 "poll", "read", "write", "clock_nanosleep")


def cost_run(meter):
    """tests/bench/cost.py with one meter over COST_CASES: its output lines."""
    argv = [sys.executable, os.path.join(HERE, "cost.py"), "--build", S.build,
            "--meter", meter, "--out-dir", S.cost_dir]
    for c in COST_CASES:
        argv += ["--case", c]
    # Its own state directory: cost.py empties the one it is given.
    env = dict(os.environ, BENCH_STATE_DIR=S.cost_dir)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"cost.py --meter {meter}: {p.stderr.strip()[-300:]}")
    return p.stdout.splitlines()


def cost_parse(count, strace, callgrind):
    """Per request, by case: what cost.py's three meters printed."""
    per = {c: {"calls": {}} for c in COST_CASES}
    num = lambda t: float(t.replace(",", ""))
    for line in callgrind:
        m = re.match(r"(\w+): [\d,]+ requests under callgrind; ([\d,]+) instructions", line)
        if m and m.group(1) in per:
            per[m.group(1)]["instructions"] = num(m.group(2))
    for line in count:
        m = re.match(r"(\w+): .*voluntary cs ([\d.]+), involuntary cs ([\d.]+), "
                     r"user µs ([\d.]+), sys µs ([\d.]+)", line)
        if m and m.group(1) in per:
            d = per[m.group(1)]
            d["vcs"], d["ics"], d["user"], d["sys"] = (num(g) for g in m.groups()[1:])
    case = None
    for line in strace:
        m = re.match(r"(\w+): [\d,]+ requests under strace", line)
        if m:
            case = m.group(1) if m.group(1) in per else None
            continue
        p = line.split()
        if case and len(p) >= 2 and line.startswith("  "):
            per[case]["calls"][p[0]] = num(p[1])
    return per


def cost_lines():
    """The cost of a replay and of a fresh payment in one worker."""
    S.cost_dir = os.path.join(S.state_root, "cost")
    say("cost of a request: cost.py --meter count, strace, callgrind")
    # A meter whose tool is missing is left out: its columns say n/a.
    have = lambda tool: shutil.which(tool) is not None
    per = cost_parse(cost_run("count"),
                     cost_run("strace") if have("strace") else [],
                     cost_run("callgrind") if have("valgrind") else [])
    f1 = lambda v: "n/a" if v is None else f"{v:,.1f}"
    lines = [
        "One worker behind lighttpd, 32 connections, wrk for 5 s per meter "
        "(`tests/bench/cost.py`, which says how each is read): instructions "
        "from callgrind (start-up and shutdown subtracted), which a busy "
        "machine does not change; system calls from `strace -f -c`; context "
        "switches (every thread's, from /proc) and CPU time of the worker "
        "from a run without a tracer. Per request answered.", "",
        "| request | instructions | system calls | voluntary switches | "
        "involuntary switches | CPU µs (user + sys) |",
        "|---|---:|---:|---:|---:|---:|"]
    for c in COST_CASES:
        d = per[c]
        ins = d.get("instructions")
        cpu = (f"{d['user'] + d['sys']:,.0f} ({d['user']:,.0f} + {d['sys']:,.0f})"
               if "user" in d else "n/a")
        lines.append(f"| {'a replay' if c == 'replay' else 'a fresh payment'} | "
                     f"{'n/a' if ins is None else f'{ins:,.0f}'} | "
                     f"{f1(d['calls'].get('total'))} | {f1(d.get('vcs'))} | "
                     f"{f1(d.get('ics'))} | {cpu} |")
    calls = per["fresh"]["calls"]
    if calls:
        named = [f"{k} {calls[k]:.2f}" for k in COST_SYSCALLS if k in calls]
        rest = sum(v for k, v in calls.items() if k not in COST_SYSCALLS and k != "total")
        lines += ["", "A fresh payment's system calls: " + ", ".join(named) +
                  (f", others {rest:.2f}" if rest else "") + "."]
    return lines


def flush_lines(fresh_cases, main_server):
    """The flushes-per-payment section, from the counter or from strace."""
    lines = []
    have_counter = any("syncs" in r for c in fresh_cases for r in c.results)
    if have_counter:
        lines.append("From the responder's counters (`idem_store_syncs_total` over "
                     "`idem_claims_total`, read from GET /metrics before and after "
                     "each fresh case, once in-flight requests were answered):")
        lines.append("")
        lines.append("| case | claims | store syncs | syncs per fresh payment |")
        lines.append("|---|---:|---:|---:|")
        ts = tc = 0
        for c in fresh_cases:
            s = sum(r.get("syncs", 0) for r in c.results)
            k = sum(r.get("claims", 0) for r in c.results)
            ts += s
            tc += k
            lines.append(f"| {c.label} | {k:,.0f} | {s:,.0f} | "
                         f"{s / k:.2f} |" if k else f"| {c.label} | 0 | {s:,.0f} | n/a |")
        if tc:
            lines.append(f"| all fresh cases | {tc:,.0f} | {ts:,.0f} | {ts / tc:.2f} |")
        lines += [""] + wait_lines(fresh_cases) + [""] + disk_lines()
        return lines
    res, why = trace_syncs(main_server)
    if res is None:
        return [f"n/a: the responder has no `idem_store_syncs_total` counter and {why}."]
    counts, claims = res
    lines.append("The responder has no `idem_store_syncs_total` counter yet, so the syncs "
                 f"were counted with strace on every worker during {S.strace_seconds} s "
                 f"of fresh payments ({S.connections} connections, latency 0): "
                 "fdatasync/fsync/msync calls, plus writes through a descriptor opened "
                 "O_DSYNC/O_SYNC (how LMDB writes its meta page), divided by the claims "
                 "counted in `idem_claims_total`. strace slows the workers; the ratio, "
                 "not the speed, is the figure.")
    lines.append("")
    lines.append("| file | syncs | per fresh payment |")
    lines.append("|---|---:|---:|")
    total = sum(counts.values())
    for k in sorted(counts):
        lines.append(f"| {k} | {counts[k]:,} | "
                     f"{counts[k] / claims:.2f} |" if claims else f"| {k} | {counts[k]} | n/a |")
    lines.append(f"| all ({claims:,.0f} fresh payments) | {total:,} | "
                 f"{total / claims:.2f} |" if claims else f"| all | {total} | n/a |")
    return lines


def wait_lines(fresh_cases):
    """Where a fresh payment's time goes: its waits for durable commits."""
    lines = ["Where a fresh payment's time goes, from the same counters "
             "(`idem_store_commit_seconds_total`: LMDB's commits, page writes "
             "and both syncs; `idem_store_write_wait_seconds_total`: each "
             "write's wait from its queueing to its durable commit), summed "
             "over the rounds. The store and the simulated provider's ledger "
             "are two LMDB environments and both count here.", "",
             "| case | writes per payment | writes per commit | a commit, ms | "
             "waits per payment, ms | wrk p50, ms |",
             "|---|---:|---:|---:|---:|---:|"]
    for c in fresh_cases:
        t = {k: sum(r.get(k, 0) for r in c.results) for k in STORE_COUNTERS}
        k = sum(r.get("claims", 0) for r in c.results)
        if not k or not t["commits"] or not t["writes"]:
            lines.append(f"| {c.label} | n/a | | | | |")
            continue
        p50 = med([r["latency_us"]["p50"] for r in c.results]) / 1000
        lines.append(f"| {c.label} | {t['writes'] / k:.2f} | "
                     f"{t['writes'] / t['commits']:.1f} | "
                     f"{t['commit_s'] * 1e3 / t['commits']:.2f} | "
                     f"{t['wait_s'] * 1e3 / k:.2f} | {p50:.2f} |")
    return lines


def disk_probe(directory, rounds=200):
    """Microseconds of the disk under the stores: a one-page write and
    fdatasync, 25 scattered pages and fdatasync, a one-page O_DSYNC write
    (how LMDB writes its meta page)."""
    path = os.path.join(directory, "disk-probe")
    page = b"\x5a" * 4096
    npages = 4096
    out = {}
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.pwrite(fd, page * npages, 0)
        os.fsync(fd)
        rnd = random.Random(1)
        for name, n in (("1", 1), ("25", 25)):
            t = time.perf_counter()
            for _ in range(rounds):
                for _ in range(n):
                    os.pwrite(fd, page, rnd.randrange(npages) * 4096)
                os.fdatasync(fd)
            out[name] = (time.perf_counter() - t) / rounds * 1e6
        dfd = os.open(path, os.O_RDWR | os.O_DSYNC)
        try:
            t = time.perf_counter()
            for i in range(rounds):
                os.pwrite(dfd, page, (i % 2) * 4096)
            out["dsync"] = (time.perf_counter() - t) / rounds * 1e6
        finally:
            os.close(dfd)
    finally:
        os.close(fd)
        os.unlink(path)
    return out


def disk_lines():
    try:
        d = disk_probe(S.run_dir)
    except OSError as e:
        return [f"The disk probe failed: {e}"]
    floor = d["1"] + d["dsync"]
    return [f"The disk under the stores ({S.run_dir}), measured after the rounds "
            "from Python, 200 times each: "
            f"a one-page write and fdatasync "
            f"**{d['1']:.0f} µs**; 25 scattered pages and fdatasync "
            f"**{d['25']:.0f} µs**; a one-page O_DSYNC write **{d['dsync']:.0f} µs**. "
            "An LMDB commit is at least one fdatasync of its pages and one "
            f"O_DSYNC write of its meta page, here {floor:.0f} µs with one page, "
            "and a fresh payment waits for three commits one after the other "
            "(its claim, the provider's ledger, its completion), each after the "
            "commit under way when it was queued: about "
            f"{3 * 1.5 * floor / 1000:.1f} ms of waits before any page is "
            "counted beyond the first."]


def purge_lines(res, fill_info):
    if res is None:
        return ["Not run (BENCH_PURGE_KEYS=0)."]
    if "failed" in res:
        return [f"Failed: {res['failed']}"]
    b, d = res["baseline"], res["during"]
    lines = [f"{S.purge_keys:,} keys written already expired by `store_bench fill -x` "
             f"({fill_info}) into a fresh instance without a key file; fresh payments "
             f"({S.connections} connections, latency 0) for {S.seconds} s, then again "
             f"while `{res['command']}` ran (started 2 s into the load, which stopped 2 s "
             "after it ended).", ""]
    if res.get("error"):
        lines.append(f"- purge failed: {res['error']}")
    if res.get("seconds") is not None:
        purged = res.get("purged")
        rate = f", {purged / res['seconds']:,.0f} keys/s" if purged else ""
        lines.append(f"- purge: {purged if purged is not None else '?':,} keys in "
                     f"{res['seconds']:.1f} s{rate}")
    lines.append(f"- fresh payments alone: {b['rps']:,.0f} req/s, p50 {ms(b['latency_us']['p50'])} "
                 f"ms, p99 {ms(b['latency_us']['p99'])} ms, max {ms(b['latency_us']['max'])} ms")
    lines.append(f"- fresh payments during purge: {d['rps']:,.0f} req/s, p50 "
                 f"{ms(d['latency_us']['p50'])} ms, p99 {ms(d['latency_us']['p99'])} ms, "
                 f"**longest stall (max latency) {ms(d['latency_us']['max'])} ms**, "
                 f"{d['bad']} non-2xx, {d['sockerr']} socket errors")
    return lines


# ---------------------------------------------------------------- cluster

CLUSTER_HOSTS = ("pg-a", "pg-b")


def cluster_servers(idem):
    """PostgreSQL (tests/lib/pg.py, its files on the state directory's file
    system), the provider service, and three hosts calling it: lmdb-svc on
    LMDB, pg-a and pg-b sharing the PostgreSQL store.  Each host has a
    stored payment under the key the replay cases send."""
    args = argparse.Namespace(workers=S.workers, latency_ms=0, keep=S.keep,
                              provider_timeout_ms=10000)
    S.cluster_obj = Cluster(S.build, args, hosts=0, base=S.state_root)
    c = S.cluster_obj
    c.provider.env["IDEM_PROVIDER_THREADS"] = str(S.provider_threads)
    c.start()
    # Each account bounded as serve-cluster's are (etc/idem.env's default),
    # which the PostgreSQL store checks on every claim of a new key.
    env = {"IDEM_PROVIDER_URL": c.provider.url, "IDEM_PROVIDER_LATENCY_MS": "0",
           "IDEM_KEYS_PER_ACCOUNT": "8388608"}
    out = {"lmdb-svc": Server("lmdb-svc", idem, env)}
    for n in CLUSTER_HOSTS:
        out[n] = Server(n, idem, dict(env, IDEM_STORE=c.uri))
        # Hosts of one store seal with one key file: the first host's.
        env.setdefault("IDEM_SECRET_FILE", os.path.join(out[n].state, "secret"))
    for srv in out.values():
        srv.start()
        first_payment(srv)
    return out


def cluster_cases(servers):
    """Fresh payments and replays through one host on LMDB, one host on
    PostgreSQL, and both PostgreSQL hosts at once."""
    auth = f"auth={S.secrets[ACCOUNT]}"
    auths = "auths=" + ",".join(S.secrets[f"{ACCOUNT}_{i:02d}"]
                                for i in range(CLUSTER_ACCOUNTS))
    kinds = (("fresh", f"fresh payments, {CLUSTER_ACCOUNTS} accounts", "keys.lua",
              [auths, "mode=fresh", f"body={BODY}"]),
             ("replay", "replay (one stored key)", "fixed.lua",
              ["method=POST", "path=/payments", auth, "key=bench-replay",
               f"body={BODY}"]))
    out = []
    for kind, what, script, args in kinds:
        fresh = kind == "fresh"
        one = [WrkCase(f"cluster-lmdb-{kind}", f"{what}, one host, LMDB",
                       servers["lmdb-svc"], S.connections, script, args, fresh=fresh),
               WrkCase(f"cluster-pg1-{kind}", f"{what}, one host, PostgreSQL",
                       servers[CLUSTER_HOSTS[0]], S.connections, script, args,
                       fresh=fresh)]
        for c in one:
            c.group = "cluster"
        out += one + [SplitWrkCase(
            f"cluster-pg2-{kind}", f"{what}, two hosts, PostgreSQL",
            [servers[n] for n in CLUSTER_HOSTS], S.connections, script, args,
            fresh=fresh)]
    return out


def cluster_lines(cases, bare):
    rows = [c for c in cases if c.group == "cluster"]
    if not rows:
        return ["Not run (BENCH_CLUSTER=0)."]
    lines = [
        "The cluster of `./quickstart serve-cluster`: PostgreSQL (tests/lib/pg.py: "
        "initdb on the state directory's file system, a unix socket, fsync and "
        "synchronous_commit on) holds the keys and payments of hosts pg-a and pg-b, "
        f"each lighttpd with {S.workers} spawn-fcgi workers; lmdb-svc is one such "
        "host on LMDB. All three call one provider service (idem-provider behind its "
        f"own lighttpd, latency 0, {S.provider_threads} threads), unlike the cases "
        "above, whose workers use the in-process provider. A two-host case runs one "
        f"wrk per host at once, {S.connections} connections in all: req/s is their "
        "sum, p50/p99/max the slower host's. Every host shares this machine's cores, "
        "so the figures show what sharing a store over a socket costs, not what a "
        "second machine would add.", "",
        "| case | conns | req/s median (min–max) | p50 ms | p99 ms | max ms | vs bare "
        "| non-2xx | socket errors | vs one host on LMDB |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for c in rows:
        kind = c.name.rsplit("-", 1)[1]
        base = next((x for x in rows if x.name == f"cluster-lmdb-{kind}"), None)
        b = med([r["rps"] for r in base.results]) if base and base.results else None
        m = med([r["rps"] for r in c.results]) if c.results else None
        ratio = f"{m / b:.2f}" if m and b else "n/a"
        lines.append(http_row(c, bare) + f" {ratio} |")
    lines += ["", "What a fresh payment costs each host's store, from the responder's "
              "counters (`idem_store_statements_total` and "
              "`idem_store_round_trips_total`, PostgreSQL only, over "
              "`idem_claims_total`), and the CPU the host's workers and the "
              "PostgreSQL server's processes used during the case (from "
              "/proc, over the claims; PostgreSQL's is every session's, the "
              "other host's idle ones included). One host per case.", "",
              "| case | statements | round trips | CPU ms, idem-fcgi | "
              "CPU ms, PostgreSQL | CPU ms in all |",
              "|---|---:|---:|---:|---:|---:|"]
    for c in rows:
        if not c.fresh or isinstance(c, SplitWrkCase):
            continue
        k = sum(r.get("claims", 0) for r in c.results)
        if not k:
            lines.append(f"| {c.label} | n/a | n/a | n/a | n/a | n/a |")
            continue
        st = sum(r.get("stmts", 0) for r in c.results)
        rt = sum(r.get("trips", 0) for r in c.results)
        ci = sum(r.get("cpu_idem_s", 0) for r in c.results) * 1e3 / k
        cp = sum(r.get("cpu_pg_s", 0) for r in c.results) * 1e3 / k
        pg = "pg" in c.name
        lines.append(f"| {c.label} | {st / k:.2f} | {rt / k:.2f} | {ci:.2f} | "
                     f"{cp:.2f} | {ci + cp:.2f} |" if pg else
                     f"| {c.label} | – | – | {ci:.2f} | – | {ci:.2f} |")
    for c in rows:
        split = [r["hosts"] for r in c.results if "hosts" in r]
        if split:
            lines.append(f"\n- {c.name}: req/s per host by round: "
                         + "; ".join(" + ".join(f"{v:,}" for v in h) for h in split))
        for f in c.failures:
            lines.append(f"\n- {c.name}: {f}")
    return lines


def build_cases(servers, loc):
    auth = f"auth={S.secrets[ACCOUNT]}"
    c, lc = S.connections, S.lat_connections
    cases = [
        WrkCase("bare", "bare libfcgi responder, GET /healthz", servers["bare"], c,
                "fixed.lua", ["method=GET", "path=/healthz"]),
        WrkCase("healthz", "idem GET /healthz", servers["idem"], c,
                "fixed.lua", ["method=GET", "path=/healthz"]),
        WrkCase("replay", "idem replay (POST, one stored key)", servers["idem"], c,
                "fixed.lua", ["method=POST", "path=/payments", auth,
                              "key=bench-replay", f"body={BODY}"]),
        WrkCase("fresh", "idem fresh payments, latency 0", servers["idem"], c,
                "keys.lua", [auth, "mode=fresh", f"body={BODY}"], fresh=True),
        WrkCase("fresh-wide", "idem fresh payments, latency 0", servers["idem"], lc,
                "keys.lua", [auth, "mode=fresh", f"body={BODY}"], fresh=True),
        WrkCase("fresh-lat", f"idem fresh payments, latency {S.latency_ms} ms",
                servers["idem-lat"], lc, "keys.lua",
                [auth, "mode=fresh", f"body={BODY}"], fresh=True),
        WrkCase("get", "idem GET /payments/{id}", servers["idem"], c,
                "fixed.lua", ["method=GET", f"path={loc}", auth]),
    ]
    # The replays of the filled stores, when they were made (not with --only).
    for size in ("10k", "1m") if "idem-10k" in servers else ():
        srv = servers[f"idem-{size}"]
        cases.append(WrkCase(f"replay-{size}-one", f"replay, one key, {size}", srv, c,
                             "fixed.lua", ["method=POST", "path=/payments", auth,
                                           "key=fill-0", f"body={BODY}"]))
    for size, n in (("10k", S.small_keys), ("1m", S.big_keys)) \
            if "idem-10k" in servers else ():
        srv = servers[f"idem-{size}"]
        cases.append(WrkCase(f"replay-{size}-random", f"replay, random key, {size}", srv, c,
                             "keys.lua", [auth, "mode=random", f"body={BODY}",
                                          "prefix=fill-", f"count={n}"]))
    # Reorder so that 10k and 1M alternate: one, one, random, random.
    order = ["bare", "healthz", "replay", "fresh", "fresh-wide", "fresh-lat", "get",
             "replay-10k-one", "replay-1m-one", "replay-10k-random", "replay-1m-random"]
    cases.sort(key=lambda x: order.index(x.name))
    threads = [1] + ([S.store_threads] if S.store_threads > 1 else [])
    for t in threads:
        sfx = "" if t == 1 else f"-t{t}"
        cases += [
            StoreCase(f"store-lmdb{sfx}", "idem store (LMDB, durable)", ["lmdb"], t),
            StoreCase(f"store-sqlite-full{sfx}", "SQLite WAL, synchronous=FULL",
                      ["sqlite", "-s", "full"], t),
            StoreCase(f"store-sqlite-normal{sfx}", "SQLite WAL, synchronous=NORMAL",
                      ["sqlite", "-s", "normal"], t),
        ]
    if S.cases:
        cases = [x for x in cases if x.name in S.cases or x.name == "bare"]
    return cases


def setup_paths(args):
    S.build = os.path.abspath(args.build)
    for prog in ("idem-fcgi", "idemctl", "tests/bench/bare", "tests/bench/store_bench"):
        if not os.access(os.path.join(S.build, prog), os.X_OK):
            sys.exit(f"bench: {S.build}/{prog} missing: build with --enable-bench "
                     "and run make bench-programs (./quickstart bench does)")
    for tool in ("wrk", "lighttpd", "spawn-fcgi"):
        if shutil.which(tool) is None:
            sys.exit(f"bench: {tool} not found (./quickstart bench installs it)")
    S.store_bench = os.path.join(S.build, "tests/bench/store_bench")
    S.account = run_account()
    root = S.state_dir or os.path.join(REPO, "var", "bench")
    if S.account[2] is not None and not traversable(os.path.dirname(root)):
        root = tempfile.mkdtemp(prefix="idem-bench-", dir="/var/tmp")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    os.chmod(root, 0o755)
    S.state_root = root
    S.run_dir = os.path.join(root, "run")
    os.makedirs(S.run_dir)
    os.chmod(S.run_dir, 0o755)
    S.scratch = os.path.join(root, "scratch")
    os.makedirs(S.scratch)
    fill = S.fill_dir
    need = 800 * max(S.big_keys, S.purge_keys) * 3 // 2
    if not fill:
        fill = root
        if mount_of("/dev/shm")[1] == "tmpfs" and os.access("/dev/shm", os.W_OK):
            st = os.statvfs("/dev/shm")
            if st.f_bavail * st.f_frsize >= need:
                fill = "/dev/shm"
    S.fill_root = tempfile.mkdtemp(prefix="idem-bench-fill-", dir=fill)
    S.fill_argv = []
    if mount_of(S.fill_root)[1] != "tmpfs":
        S.notes.append(f"The fills ran on {mount_of(S.fill_root)[1]}, not a tmpfs: "
                       "every key cost two synced transactions (set BENCH_FILL_DIR to "
                       "a tmpfs with room for the fills).")


def cleanup():
    for inst in list(INSTANCES):
        try:
            inst.stop()
        except Exception:           # noqa: BLE001 - cleanup goes on
            pass
    INSTANCES.clear()
    if S is not None and getattr(S, "cluster_obj", None) is not None:
        S.cluster_obj.cleanup()
        S.cluster_obj = None
    if S is not None:
        if getattr(S, "fill_root", None):
            shutil.rmtree(S.fill_root, ignore_errors=True)
        if getattr(S, "state_root", None) and not S.keep:
            shutil.rmtree(S.state_root, ignore_errors=True)
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def become_subreaper():
    """Workers that spawn-fcgi leaves behind are reparented to us, so they are
    reaped here; best effort, Linux only."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def run_rounds(cases):
    for rnd in range(1, S.rounds + 1):
        for c in cases:
            t0 = time.monotonic()
            try:
                r = c.run(rnd)
            except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
                msg = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
                c.failures.append(f"round {rnd}: {msg}")
                say(f"round {rnd} {c.name}: FAILED: {str(e).strip()[:800]}")
                continue
            c.results.append(r)
            extra = ""
            if "latency_us" in r:
                extra = (f" p50 {ms(r['latency_us']['p50'])} ms p99 "
                         f"{ms(r['latency_us']['p99'])} ms non-2xx {r['bad']}")
            say(f"round {rnd}/{S.rounds} {c.name}: {r['rps']:,.0f}/s{extra} "
                f"({time.monotonic() - t0:.0f} s)")


def only_cluster(args, ctx, servers, idem, started):
    """--only cluster: the bare responder and the cluster's cases."""
    servers["bare"].start()
    servers.update(cluster_servers(idem))
    cases = [WrkCase("bare", "bare libfcgi responder, GET /healthz", servers["bare"],
                     S.connections, "fixed.lua", ["method=GET", "path=/healthz"])]
    cases += cluster_cases(servers)
    ctx["cases"] = cases
    ctx["fill_argv"] = []
    run_rounds(cases)
    for srv in servers.values():
        srv.stop()
    ctx["load_after"] = loadavg()
    ctx["elapsed"] = time.monotonic() - started
    write_cluster_report(args.out, ctx)
    say(f"wrote {args.out} in {ctx['elapsed']:.0f} s")
    return 1 if any(c.failures for c in cases) else 0


def start_peers(servers, cases):
    """The peers, started and checked, with their cases beside idem's;
    cases unchanged when they cannot run."""
    S.peers_ran = prepare_peers()
    if not S.peers_ran:
        S.peers_why = S.notes[-1]
        return cases
    servers.update(peer_servers())
    return beside_peers(cases, peer_cases(servers))


def only_peers(args, ctx, servers, idem, started):
    """--only peers: idem's cases of the peers' shapes, and the peers'
    (the bare responder in servers is not started)."""
    servers["idem"] = Server("idem", idem, {"IDEM_PROVIDER_LATENCY_MS": "0"})
    servers["idem-lat"] = Server("idem-lat", idem,
                                 {"IDEM_PROVIDER_LATENCY_MS": str(S.latency_ms)})
    for n in ("idem", "idem-lat"):
        servers[n].start()
    first_payment(servers["idem"])
    cases = [c for c in build_cases(servers, "/payments") if c.name in PEER_SHAPES]
    cases = start_peers(servers, cases)
    ctx["cases"] = cases
    ctx["fill_argv"] = []
    run_rounds(cases)
    for srv in servers.values():
        srv.stop()
    ctx["load_after"] = loadavg()
    ctx["elapsed"] = time.monotonic() - started
    write_part_report(args.out, ctx, "peers",
                      lambda w: peers_section(ctx["cases"], w))
    say(f"wrote {args.out} in {ctx['elapsed']:.0f} s")
    return 1 if any(c.failures for c in cases) else 0


def only_pages(args, ctx, servers, idem, started):
    """--only pages: the long list's cases alone (the bare responder in
    servers is not started)."""
    ctx["cases"] = cases = pages_setup(idem, servers, ctx)
    ctx["fill_argv"] = S.fill_argv
    run_rounds(cases)
    for srv in servers.values():
        srv.stop()
    ctx["load_after"] = loadavg()
    ctx["elapsed"] = time.monotonic() - started
    write_part_report(args.out, ctx, "pages",
                      lambda w: pages_section(ctx["cases"], ctx, w))
    say(f"wrote {args.out} in {ctx['elapsed']:.0f} s")
    return 1 if any(c.failures for c in cases) else 0


def main():
    global S
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory (--enable-bench)")
    ap.add_argument("--out", default=os.path.join(REPO, "BENCHMARKS.md"))
    ap.add_argument("--only", choices=("cluster", "peers", "pages"),
                    default=os.environ.get("BENCH_ONLY") or None,
                    help="run only this part (the cluster beside the bare "
                    "responder; the peers beside idem's cases of their shapes; "
                    "the pages of a long list) and write only its section (for "
                    "working on it); default $BENCH_ONLY")
    args = ap.parse_args()
    if args.only not in (None, "cluster", "peers", "pages"):
        ap.error(f"BENCH_ONLY={args.only!r}: cluster, peers or pages")
    S = Settings()
    # The cluster's processes (tests/lib) wait within lib.common's deadline.
    libcommon.DEADLINE.reset(24 * 3600)
    S.notes = []
    S.failed = []       # one-off phases that failed
    started = time.monotonic()
    become_subreaper()
    atexit.register(cleanup)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    setup_paths(args)
    S.runid = secrets.token_hex(4)
    S.secrets = {ACCOUNT: "sk_bench_" + secrets.token_hex(16),
                 METRICS_ACCOUNT: "sk_metrics_" + secrets.token_hex(16)}
    for i in range(CLUSTER_ACCOUNTS):
        S.secrets[f"{ACCOUNT}_{i:02d}"] = "sk_bench_" + secrets.token_hex(16)
    S.bench_env = {"IDEM_MAP_SIZE": "4G", "IDEM_KEYS_PER_ACCOUNT": "0",
                   "IDEM_THREADS": "256"}
    S.user_env = {k: v for k, v in os.environ.items()
                  if k.startswith("IDEM_") and k not in OWN_ENV}
    S.fp_mode = S.user_env.get("IDEM_FINGERPRINT", "canonical")
    ctx = {"notes": S.notes, "load_before": loadavg(), "commit": commit(),
           "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
           "flags": build_flags()}
    ctx["machine"] = machine()
    say(f"state in {S.state_root}; fills on {S.fill_root}; "
        f"{S.rounds} rounds of {S.seconds} s per case")
    if "IDEM_PROVIDER_LATENCY_MS" in S.user_env:
        ctx["notes"].append("IDEM_PROVIDER_LATENCY_MS from the environment is "
                            "overridden per case.")

    lat0 = {"IDEM_PROVIDER_LATENCY_MS": "0"}
    servers = {"bare": Server("bare", os.path.join(S.build, "tests/bench/bare"))}
    idem = os.path.join(S.build, "idem-fcgi")
    if args.only == "cluster":
        return only_cluster(args, ctx, servers, idem, started)
    if args.only == "peers":
        return only_peers(args, ctx, servers, idem, started)
    if args.only == "pages":
        return only_pages(args, ctx, servers, idem, started)
    servers["idem"] = Server("idem", idem, lat0)
    servers["idem-lat"] = Server("idem-lat", idem,
                                 {"IDEM_PROVIDER_LATENCY_MS": str(S.latency_ms)})
    for s in list(servers.values()):
        s.start()
    loc, answer = first_payment(servers["idem"])
    small, ssize, stime = fill(S.small_keys, "fill-", answer=answer, location=loc)
    # store_bench fill writes its records in the clear, so the instances
    # serving a fill run without a key file (a sealed worker refuses them).
    clear = dict(lat0, IDEM_SECRET_FILE="")
    servers["idem-10k"] = Server("idem-10k", idem, clear,
                                 {os.path.join(small, "data.mdb"): "data.mdb"})
    shutil.rmtree(small, ignore_errors=True)
    big, bsize, btime = fill(S.big_keys, "fill-", answer=answer, location=loc)
    servers["idem-1m"] = Server("idem-1m", idem, clear,
                                {os.path.join(big, "data.mdb"): "data.mdb"})
    shutil.rmtree(big, ignore_errors=True)
    ctx["fill_argv"] = S.fill_argv
    ctx["fill_small"] = f"{S.small_keys:,} keys: {ssize / 1e6:,.0f} MB in {stime:.1f} s"
    ctx["fill_big"] = f"{S.big_keys:,} keys: {bsize / 1e6:,.0f} MB in {btime:.1f} s"
    for n in ("idem-10k", "idem-1m"):
        servers[n].start()

    cases = build_cases(servers, loc)
    if want_pages():
        cases += pages_setup(idem, servers, ctx)
    if S.cluster:
        servers.update(cluster_servers(idem))
        cases += [c for c in cluster_cases(servers)
                  if not S.cases or c.name in S.cases]
    cases = start_peers(servers, cases)
    ctx["cases"] = cases
    run_rounds(cases)
    for srv in servers.values():
        if isinstance(srv, PeerServer):
            srv.stop()

    fresh = [c for c in cases if isinstance(c, WrkCase) and c.fresh
             and c.group == "main"]
    try:
        ctx["flushes"] = flush_lines(fresh, servers["idem"]) if fresh else ["Not run."]
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        ctx["flushes"] = [f"n/a: {str(e).strip()[:300]}"]
        S.failed.append("flushes")
    ctx["cost"] = ["Not run (BENCH_COST=0)."]
    if S.cost and "fresh" in {c.name for c in cases}:
        try:
            ctx["cost"] = cost_lines()
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            ctx["cost"] = [f"n/a: {str(e).strip()[:300]}"]
            S.failed.append("cost")
    ctx["memory"] = [(f"{n} ({'bare' if n == 'bare' else 'idem-fcgi'})", memory(servers[n]))
                     for n in ("bare", "idem", "idem-lat", "idem-10k", "idem-1m")]
    for n in ("idem-10k", "idem-1m", "idem-lat", "idem-pages"):
        if n in servers:
            servers[n].stop()

    purge = None
    finfo = ""
    if S.purge_keys > 0:
        d, psize, ptime = fill(S.purge_keys, "old-", expired=True,
                               answer=answer, location=loc)
        finfo = f"{psize / 1e6:,.0f} MB in {ptime:.1f} s"
        servers["idem-purge"] = Server("idem-purge", idem, clear,
                                       {os.path.join(d, "data.mdb"): "data.mdb"})
        shutil.rmtree(d, ignore_errors=True)
        servers["idem-purge"].start()
        say(f"purging {S.purge_keys:,} expired keys under load")
        try:
            purge = purge_run(servers["idem-purge"])
            say(f"purge: {purge.get('seconds')} s, longest stall "
                f"{ms(purge['during']['latency_us']['max'])} ms")
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            purge = {"failed": str(e).strip()[:300]}
            S.failed.append("purge")
        servers["idem-purge"].stop()
    ctx["purge"] = purge_lines(purge, finfo)
    ctx["retry"] = retry_run(idem)
    for s in servers.values():
        s.stop()
    ctx["load_after"] = loadavg()
    ctx["elapsed"] = time.monotonic() - started
    for c in cases:
        if any(r.get("bad") for r in c.results):
            ctx["notes"].append(f"{c.name}: some answers were not 2xx; see the "
                                "workers' log (BENCH_KEEP=1 keeps it).")
    write_report(args.out, ctx)
    say(f"wrote {args.out} in {ctx['elapsed']:.0f} s")
    failed = sum(len(c.failures) for c in cases if not c.unsupported) + len(S.failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
