#!/usr/bin/env python3
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
import errno
import atexit
import base64
import concurrent.futures
import hashlib
import http.client
import json
import os
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
ETC = os.path.join(REPO, "etc")
WWW = os.path.join(REPO, "www")

SERVERS = ("lighttpd", "lighttpd-spawn", "apache", "nginx")
BODY = b'{"amount": 100.00, "currency": "BRL"}'
OTHER_BODY = b'{"amount": 250.00, "currency": "BRL"}'
HOST = "127.0.0.1"


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


DEADLINE = Deadline(240)


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.lock = threading.Lock()

    def ok(self, server, name):
        with self.lock:
            self.passed += 1
            print(f"ok - {server}: {name}", flush=True)

    def fail(self, server, name, why):
        with self.lock:
            self.failed += 1
            why = str(why).rstrip().replace("\n", "\n#   ")
            print(f"FAIL - {server}: {name}: {why}", flush=True)


RESULTS = Results()
INSTANCES = []          # every instance ever set up, for atexit cleanup


def note(msg):
    print(f"# {msg}", flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def render(template, mapping, out):
    """Substitutes @NAME@ placeholders; a placeholder left over is an error."""
    with open(template) as f:
        text = f.read()
    for k, v in mapping.items():
        text = text.replace(f"@{k}@", str(v))
    # Comments may mention placeholders; only live lines must be complete.
    live = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    left = sorted(set(re.findall(r"@[A-Z_]+@", "\n".join(live))))
    if left:
        raise RuntimeError(f"{template}: placeholders not substituted: {' '.join(left)}")
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
    """Live processes whose executable is exe (each instance has its own copy)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            target = os.readlink(f"/proc/{d}/exe")
        except OSError:
            continue
        if target == exe or target == exe + " (deleted)":
            if proc_alive(int(d)):
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


def tail(path, n=15):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
        return "\n".join(f"{os.path.basename(path)}: {ln}" for ln in lines[-n:])
    except OSError:
        return ""


# ---------------------------------------------------------------- HTTP

class Reply:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers          # list of (name, value)
        self.body = body

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def brief(self):
        b = self.body[:200].decode("utf-8", "replace")
        return f"{self.status} {self.header('Content-Type')} {b!r}"


def http_request(port, method, path, body=None, headers=None, conn=None):
    own = conn is None
    if own:
        conn = http.client.HTTPConnection(HOST, port, timeout=DEADLINE.timeout())
    try:
        hdrs = {"Connection": "close"}
        hdrs.update(headers or {})
        try:
            conn.request(method, path, body=body, headers=hdrs)
        except (BrokenPipeError, ConnectionResetError):
            pass   # the server may answer (413) before reading the whole body
        r = conn.getresponse()
        data = r.read()
        return Reply(r.status, r.getheaders(), data)
    finally:
        conn.close()


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

def run_account():
    """Account the servers and workers run as: unprivileged when we are root."""
    import pwd
    import grp
    if os.geteuid() != 0:
        pw = pwd.getpwuid(os.geteuid())
        return pw.pw_name, grp.getgrgid(pw.pw_gid).gr_name, None, None
    for name in ("www-data", "nobody", "daemon"):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return name, grp.getgrgid(pw.pw_gid).gr_name, pw.pw_uid, pw.pw_gid
    raise RuntimeError("no unprivileged account (www-data, nobody) to run the servers as")


def temp_base():
    base = tempfile.gettempdir()
    if os.geteuid() == 0:
        # every parent must be traversable by the unprivileged account
        p = base
        while p not in ("/", ""):
            if not os.stat(p).st_mode & 0o001:
                return "/tmp"
            p = os.path.dirname(p)
    return base


class Instance:
    """One server with its workers, state and rendered configuration."""
    uses_spawn_fcgi = False

    def __init__(self, name, build, args):
        self.name = name
        self.build = build
        self.args = args
        self.workers = args.workers
        self.user, self.group, self.uid, self.gid = run_account()
        self.root = tempfile.mkdtemp(prefix=f"idem-live-{name}-", dir=temp_base())
        os.chmod(self.root, 0o755)
        self.server = None          # Popen of the web server
        self.logs = []
        self.bindir = os.path.join(self.root, "bin")
        self.exe = os.path.join(self.bindir, "idem-fcgi")
        self.state = os.path.join(self.root, "state")
        self.port = free_port()
        # "metrics" is the monitoring account (IDEM_METRICS_ACCOUNT in etc/),
        # the only one /metrics answers.
        self.secrets = {"acct_alpha": "sk_live_" + secrets.token_hex(16),
                        "acct_beta": "sk_live_" + secrets.token_hex(16),
                        "metrics": "sk_live_" + secrets.token_hex(16)}
        INSTANCES.append(self)
        self._setup()

    # -- set-up -------------------------------------------------------
    def _make_state(self, state):
        os.makedirs(os.path.join(state, "db"))
        os.makedirs(os.path.join(state, "provider"))
        with open(os.path.join(state, "keys"), "w") as f:
            for acct, sec in self.secrets.items():
                f.write(f"{acct} {hashlib.sha256(sec.encode()).hexdigest()}\n")

    def _setup(self):
        os.makedirs(self.bindir)
        for prog in ("idem-fcgi", "idemctl"):
            src = os.path.join(self.build, prog)
            if not os.access(src, os.X_OK):
                raise RuntimeError(f"{src} missing or not executable")
            shutil.copy2(src, os.path.join(self.bindir, prog))
        self._make_state(self.state)
        self.www = os.path.join(self.root, "www")
        if os.path.isdir(WWW):
            shutil.copytree(WWW, self.www)
        else:
            os.makedirs(self.www)
        self.mapping = {
            "PORT": self.port, "ROOT": self.root, "BINDIR": self.bindir,
            "STATE": self.state, "WWW": self.www, "USER": self.user,
            "GROUP": self.group, "WORKERS": self.workers,
            "PROVIDER_LATENCY_MS": self.args.latency_ms,
        }
        self.idem_env = parse_env_file(
            render(os.path.join(ETC, "idem.env"), self.mapping,
                   os.path.join(self.root, "idem.env")))
        self.configure()
        self._chown()

    def _chown(self):
        if self.uid is None:
            return
        for d, dirs, files in os.walk(self.root):
            os.chown(d, self.uid, self.gid)
            for f in files:
                os.chown(os.path.join(d, f), self.uid, self.gid)

    def configure(self):
        raise NotImplementedError

    # -- processes ----------------------------------------------------
    def clean_env(self, extra=None):
        env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
               "LANG": "C"}
        # The sanitizer builds' options reach the workers spawned here.
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"):
            if k in os.environ:
                env[k] = os.environ[k]
        env.update(extra or {})
        return env

    def popen(self, argv, logname, env=None):
        log = os.path.join(self.root, logname)
        self.logs.append(log)
        with open(log, "ab") as out:
            return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, cwd=self.root,
                                    env=env or self.clean_env(), start_new_session=True)

    def start_server(self):
        raise NotImplementedError

    def start(self):
        if self.uses_spawn_fcgi:
            self.spawn_workers()
        self.start_server()
        self.wait_ready(self.port)

    def wait_ready(self, port, seconds=15):
        end = min(time.monotonic() + seconds, DEADLINE.end)
        last = "no answer"
        while time.monotonic() < end:
            if self.server is not None and self.server.poll() is not None:
                raise RuntimeError(f"server exited with status {self.server.returncode}\n"
                                   + self.log_tail())
            try:
                conn = http.client.HTTPConnection(HOST, port, timeout=2)
                r = http_request(port, "GET", "/healthz", conn=conn)
                if r.status == 200:
                    return
                last = r.brief()
            except (OSError, http.client.HTTPException) as e:
                last = repr(e)
            time.sleep(0.05)
        raise RuntimeError(f"GET /healthz not 200 within {seconds}s (last: {last})\n"
                           + self.log_tail())

    def log_tail(self):
        parts = [tail(p) for p in self.logs if os.path.exists(p)]
        return "\n".join(p for p in parts if p)

    def worker_pids(self):
        return pids_of_exe(self.exe)

    def stop_server(self):
        p = self.server
        self.server = None
        if p is None:
            return
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout=8)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=5)
        # whatever is left of its process group
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def stop_workers(self, grace=5.0):
        """SIGTERM to every worker, SIGKILL after grace; True if all left on SIGTERM."""
        pids = self.worker_pids()
        kill_pids(pids, signal.SIGTERM)
        clean = wait_gone(pids, grace)
        if not clean:
            kill_pids(pids, signal.SIGKILL)
            wait_gone(pids, 3)
        return clean, pids

    def stop(self):
        self.stop_server()
        self.stop_workers(grace=3.0)

    def restart_workers(self):
        """Every worker replaced: returns the PIDs before."""
        raise NotImplementedError

    def cleanup(self):
        try:
            self.stop()
        finally:
            if not self.args.keep:
                shutil.rmtree(self.root, ignore_errors=True)
            else:
                note(f"{self.name}: kept {self.root}")

    # -- spawn-fcgi ---------------------------------------------------
    def spawn_workers(self, tag="", exe=None, env=None):
        """A spawn-fcgi pool on idem-fcgi{tag}.sock running exe (default the
        main copy) with env (default idem.env); its log idem-fcgi{tag}.log."""
        exe = exe or self.exe
        env = self.idem_env if env is None else env
        sock = os.path.join(self.root, f"idem-fcgi{tag}.sock")
        argv = ["spawn-fcgi", "-F", str(self.workers), "-s", sock, "-M", "0660",
                "-P", os.path.join(self.root, f"spawn-fcgi{tag}.pid")]
        if self.uid is not None:
            argv += ["-U", self.user, "-G", self.group, "-u", self.user, "-g", self.group]
        # spawn-fcgi -F points the workers' stdout/stderr at /dev/null; keep
        # their per-request log lines in a file (the shell execs idem-fcgi, so
        # the workers are still idem-fcgi processes, fd 0 the shared socket).
        wlog = os.path.join(self.root, f"idem-fcgi{tag}.log")
        if not os.path.exists(wlog):
            open(wlog, "a").close()
            if self.uid is not None:
                os.chown(wlog, self.uid, self.gid)
            self.logs.append(wlog)
        argv += ["--", "/bin/sh", "-c", 'exec "$0" 2>>"$1"', exe, wlog]
        log = os.path.join(self.root, "spawn-fcgi.log")
        if log not in self.logs:
            self.logs.append(log)
        with open(log, "ab") as out:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out,
                               stderr=subprocess.STDOUT, cwd=self.root,
                               env=self.clean_env(env),
                               timeout=DEADLINE.timeout(15))
        if p.returncode != 0:
            raise RuntimeError(f"spawn-fcgi exited {p.returncode}\n" + self.log_tail())
        end = time.monotonic() + 3
        while time.monotonic() < end and len(pids_of_exe(exe)) < self.workers:
            time.sleep(0.05)
        n = len(pids_of_exe(exe))
        if n < self.workers:
            raise RuntimeError(f"spawn-fcgi: {n} of {self.workers} workers alive\n"
                               + self.log_tail())

    # -- admin --------------------------------------------------------
    def stats(self, state=None):
        env = self.clean_env(dict(self.idem_env))
        if state:
            env["IDEM_DB_DIR"] = os.path.join(state, "db")
            env["IDEM_PROVIDER_DIR"] = os.path.join(state, "provider")
            env["IDEM_KEYS_FILE"] = os.path.join(state, "keys")
        kw = {}
        if self.uid is not None:
            kw = {"user": self.uid, "group": self.gid, "extra_groups": []}
        p = subprocess.run([os.path.join(self.bindir, "idemctl"), "stats"],
                           stdin=subprocess.DEVNULL, capture_output=True, env=env,
                           cwd=self.root, timeout=DEADLINE.timeout(), **kw)
        out = p.stdout.decode(errors="replace")
        if p.returncode != 0:
            raise RuntimeError(f"idemctl stats exited {p.returncode}: "
                               f"{p.stderr.decode(errors='replace')[-300:]}")
        vals = {}
        for m in re.finditer(r"^\s*(\w+)\s*:\s*(\d+)\s*$", out, re.M):
            vals[m.group(1)] = int(m.group(2))
        for k in ("charges", "payments"):
            if k not in vals:
                raise RuntimeError(f"idemctl stats: no '{k}: N' line in {out!r}")
        return vals


class Lighttpd(Instance):
    """lighttpd + external spawn-fcgi workers on one unix socket."""
    uses_spawn_fcgi = True

    def configure(self):
        self.conf = render(os.path.join(ETC, "lighttpd", "idem-external.conf"),
                           self.mapping, os.path.join(self.root, "lighttpd.conf"))
        self.logs.append(os.path.join(self.root, "lighttpd-error.log"))

    def start_server(self):
        self.server = self.popen(["lighttpd", "-D", "-f", self.conf], "lighttpd.out")

    def restart_workers(self):
        clean, before = self.stop_workers()
        self.spawn_workers()
        return before, clean


class LighttpdSpawn(Instance):
    """lighttpd spawning the workers itself (bin-path, max-procs)."""

    def configure(self):
        self.conf = render(os.path.join(ETC, "lighttpd", "idem-spawn.conf"),
                           self.mapping, os.path.join(self.root, "lighttpd.conf"))
        self.logs.append(os.path.join(self.root, "lighttpd-error.log"))
        self.logs.append(os.path.join(self.root, "idem-fcgi.log"))

    def start_server(self):
        self.server = self.popen(["lighttpd", "-D", "-f", self.conf], "lighttpd.out")

    def restart_workers(self):
        before = self.worker_pids()
        self.stop()
        self.start_server()
        self.wait_ready(self.port)
        return before, None


class Nginx(Instance):
    """nginx (non-daemon, private prefix) + spawn-fcgi workers; a second
    server block with auth_basic in front of a second pool of workers
    (IDEM_AUTH=remote-user, own socket, own store)."""
    uses_spawn_fcgi = True

    def configure(self):
        self.auth_port = free_port()
        while self.auth_port == self.port:
            self.auth_port = free_port()
        self.auth_state = os.path.join(self.root, "state-basic")
        self._make_state(self.auth_state)
        self.users = {"alice": "pw-" + secrets.token_hex(8), "bob": "pw-" + secrets.token_hex(8)}
        self.metrics_user = ("metrics", "pw-" + secrets.token_hex(8))
        write_htpasswd(os.path.join(self.auth_state, "htpasswd"),
                       list(self.users.items()) + [self.metrics_user], "-m")
        # The basic pool runs its own copy of the binary, so that
        # worker_pids() (the main pool) never counts it.
        self.basic_exe = os.path.join(self.root, "bin-basic", "idem-fcgi")
        os.makedirs(os.path.dirname(self.basic_exe))
        shutil.copy2(self.exe, self.basic_exe)
        self.basic_env = dict(self.idem_env, IDEM_AUTH="remote-user",
                              IDEM_DB_DIR=os.path.join(self.auth_state, "db"),
                              IDEM_PROVIDER_DIR=os.path.join(self.auth_state, "provider"),
                              IDEM_KEYS_FILE=os.path.join(self.auth_state, "keys"))
        self.mapping.update({"AUTH_PORT": self.auth_port, "AUTH_STATE": self.auth_state})
        render(os.path.join(ETC, "nginx", "idem-basic-auth.conf"), self.mapping,
               os.path.join(self.root, "idem-basic-auth.conf"))
        render(os.path.join(ETC, "nginx", "idem-site.conf"), self.mapping,
               os.path.join(self.root, "idem-site.conf"))
        self.conf = render(os.path.join(ETC, "nginx", "nginx-standalone.conf"),
                           self.mapping, os.path.join(self.root, "nginx.conf"))
        for d in ("body", "fastcgi", "proxy", "uwsgi", "scgi"):
            os.makedirs(os.path.join(self.root, "nginx-tmp", d))
        os.makedirs(os.path.join(self.root, "logs"))   # nginx's compiled-in default
        self.logs.append(os.path.join(self.root, "nginx-error.log"))

    def start_server(self):
        self.server = self.popen(
            ["nginx", "-p", self.root + "/", "-c", self.conf,
             "-e", os.path.join(self.root, "nginx-error.log")], "nginx.out")

    def start(self):
        self.spawn_workers("-basic", self.basic_exe, self.basic_env)
        super().start()
        self.wait_ready(self.auth_port)

    def stop(self):
        super().stop()
        pids = pids_of_exe(self.basic_exe)
        kill_pids(pids, signal.SIGTERM)
        if not wait_gone(pids, 3.0):
            kill_pids(pids, signal.SIGKILL)
            wait_gone(pids, 3)

    def restart_workers(self):
        clean, before = self.stop_workers()
        self.spawn_workers()
        return before, clean


def write_htpasswd(path, users, algorithm):
    """users: (name, password) pairs; algorithm: htpasswd's -B (bcrypt) or
    -m (apr1, which nginx checks itself whatever crypt(3) supports)."""
    first = True
    for user, pw in users:
        tool = shutil.which("htpasswd")
        if tool:
            subprocess.run([tool, "-b", algorithm] + (["-c"] if first else []) + [path, user, pw],
                           check=True, capture_output=True, timeout=DEADLINE.timeout())
        else:
            digest = base64.b64encode(hashlib.sha1(pw.encode()).digest()).decode()
            with open(path, "a") as f:
                f.write(f"{user}:{{SHA}}{digest}\n")
        first = False


class Apache(Instance):
    """Apache 2.4 + mod_fcgid, private instance; a second vhost with Basic auth."""

    def configure(self):
        self.auth_port = free_port()
        while self.auth_port == self.port:
            self.auth_port = free_port()
        self.auth_state = os.path.join(self.root, "state-basic")
        self._make_state(self.auth_state)
        self.users = {"alice": "pw-" + secrets.token_hex(8), "bob": "pw-" + secrets.token_hex(8)}
        # The monitoring user, the only one the responder shows /metrics.
        self.metrics_user = ("metrics", "pw-" + secrets.token_hex(8))
        self._htpasswd(os.path.join(self.auth_state, "htpasswd"))
        mods = next((d for d in ("/usr/lib/apache2/modules", "/usr/lib64/httpd/modules",
                                 "/usr/lib/httpd/modules", "/usr/libexec/apache2")
                     if os.path.exists(os.path.join(d, "mod_fcgid.so"))), None)
        if mods is None:
            raise RuntimeError("mod_fcgid.so not found (Debian: libapache2-mod-fcgid)")
        self.mapping.update({"MODULES": mods, "AUTH_PORT": self.auth_port,
                             "AUTH_STATE": self.auth_state})
        render(os.path.join(ETC, "apache", "idem-site.conf"), self.mapping,
               os.path.join(self.root, "idem-site.conf"))
        render(os.path.join(ETC, "apache", "idem-basic-auth.conf"), self.mapping,
               os.path.join(self.root, "idem-basic-auth.conf"))
        self.conf = render(os.path.join(ETC, "apache", "httpd-standalone.conf"),
                           self.mapping, os.path.join(self.root, "httpd.conf"))
        os.makedirs(os.path.join(self.root, "fcgid"))
        self.logs.append(os.path.join(self.root, "apache-error.log"))

    def _htpasswd(self, path):
        write_htpasswd(path, list(self.users.items()) + [self.metrics_user], "-B")

    def start_server(self):
        binary = shutil.which("apache2") or shutil.which("httpd")
        if binary is None:
            raise RuntimeError("apache2/httpd not found (Debian: apache2)")
        self.server = self.popen([binary, "-f", self.conf, "-DFOREGROUND"], "apache.out")

    def start(self):
        self.start_server()
        self.wait_ready(self.port)
        self.wait_ready(self.auth_port)

    def restart_workers(self):
        before = self.worker_pids()
        self.stop()
        self.start()
        return before, None


CLASSES = {"lighttpd": Lighttpd, "lighttpd-spawn": LighttpdSpawn,
           "apache": Apache, "nginx": Nginx}


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
        expect(not survivors, f"old workers still alive: {survivors}")
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
        # distinct keys first: under mod_fcgid it also brings the pool up from
        # one process, so that the duplicates really meet in different workers
        test_distinct(inst, t)
        test_duplicates(inst, t)
        if isinstance(inst, (Apache, Nginx)):
            test_basic_auth(inst, t)
        test_restart(inst, t)
        if inst.server is not None and inst.server.poll() is not None:
            RESULTS.fail(name, "server still running", f"exited {inst.server.returncode}\n"
                         + inst.log_tail())
    finally:
        if inst is not None:
            inst.stop()
            t("no sanitizer report in any log", lambda: check_no_sanitizer(inst))
            inst.cleanup()
            INSTANCES.remove(inst)
        note(f"{name}: {time.monotonic() - started:.1f} s")


# What AddressSanitizer, UndefinedBehaviorSanitizer and ThreadSanitizer
# print when they find something, in the workers' and servers' logs.
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "runtime error:", "ERROR: UndefinedBehaviorSanitizer",
                   "WARNING: ThreadSanitizer", "ERROR: ThreadSanitizer")


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
        expect(wait_gone(busy, 5), "the worker did not exit after its request")
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


def _become_subreaper():
    """Orphaned workers (spawn-fcgi's, fcgid's) are reparented to us, not to a
    PID 1 that may never reap them; best effort, Linux only."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)      # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _reap():
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def _cleanup_all():
    for inst in list(INSTANCES):
        try:
            inst.cleanup()
        except Exception:               # noqa: BLE001
            pass
    INSTANCES.clear()
    _reap()


def main():
    global DEADLINE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory with idem-fcgi and idemctl")
    ap.add_argument("--suite", default="live", help="name on the closing line (default live)")
    ap.add_argument("--server", action="append", choices=SERVERS,
                    help="server to test (repeatable; default: all)")
    ap.add_argument("--workers", type=int, default=6, help="worker processes (>= 4)")
    ap.add_argument("--latency-ms", type=int, default=200,
                    help="IDEM_PROVIDER_LATENCY_MS for the workers")
    ap.add_argument("--deadline", type=float, default=240, help="whole run, seconds")
    ap.add_argument("--keep", action="store_true", help="keep the temp directories")
    args = ap.parse_args()
    DEADLINE = Deadline(args.deadline)
    build = os.path.abspath(args.build)
    servers = args.server or list(SERVERS)
    # dedupe, keep order
    servers = list(dict.fromkeys(servers))

    _become_subreaper()
    atexit.register(_cleanup_all)
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
    print(f"{args.suite}: {RESULTS.passed} passed, {RESULTS.failed} failed", flush=True)
    return 0 if RESULTS.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
