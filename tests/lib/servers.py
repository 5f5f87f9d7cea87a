# SPDX-License-Identifier: MIT
"""The web servers of etc/ with their idem-fcgi workers, each instance in
a temporary directory of its own: lighttpd with spawn-fcgi, lighttpd
spawning its workers, nginx, and Apache with mod_fcgid.  INSTANCES holds
every instance set up; cleanup_all stops what is left of them."""

import base64
import hashlib
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time

from lib.common import (DEADLINE, HOST, free_port, kill_pids, note,
                        pids_of_exe, reap, tail, terminate, wait_gone)
from lib.web import http_request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ETC = os.path.join(REPO, "etc")
WWW = os.path.join(REPO, "www")
DEMO = os.path.join(REPO, "demo")

INSTANCES = []          # every instance ever set up, for cleanup_all


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


class ProviderService:
    """idem-provider, the payment provider service, behind a lighttpd of its
    own (etc/lighttpd/idem-provider.conf) with one spawn-fcgi worker: the
    provider the instance's workers call at IDEM_PROVIDER_URL.  Its store is
    STATE/provider-service; stop() is the service being down (connection
    refused), restart_backend(env) changes its failure mode and latency."""

    def __init__(self, inst):
        self.inst = inst
        self.root = inst.root
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.exe = os.path.join(inst.bindir, "idem-provider")
        self.db = os.path.join(inst.state, "provider-service")
        os.makedirs(self.db)
        os.makedirs(os.path.join(self.root, "provider-www"))
        self.conf = render(os.path.join(ETC, "lighttpd", "idem-provider.conf"),
                           dict(inst.mapping, PROVIDER_PORT=self.port),
                           os.path.join(self.root, "lighttpd-provider.conf"))
        self.log = os.path.join(self.root, "idem-provider.log")
        inst.logs.append(os.path.join(self.root, "lighttpd-provider-error.log"))
        inst.logs.append(self.log)
        self.server = None
        self.env = {"IDEM_PROVIDER_DB": self.db,
                    "IDEM_PROVIDER_LATENCY_MS": str(inst.args.latency_ms)}

    def start_backend(self, extra=None):
        inst = self.inst
        env = inst.clean_env(dict(self.env, **(extra or {})))
        sock = os.path.join(self.root, "idem-provider.sock")
        argv = ["spawn-fcgi", "-F", "1", "-s", sock, "-M", "0660",
                "-P", os.path.join(self.root, "spawn-provider.pid")]
        if inst.uid is not None:
            argv += ["-U", inst.user, "-G", inst.group, "-u", inst.user, "-g", inst.group]
        if not os.path.exists(self.log):
            open(self.log, "a").close()
            if inst.uid is not None:
                os.chown(self.log, inst.uid, inst.gid)
        argv += ["--", "/bin/sh", "-c", 'exec "$0" 2>>"$1"', self.exe, self.log]
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                           cwd=self.root, env=env, timeout=DEADLINE.timeout(15))
        if p.returncode != 0 or not pids_of_exe(self.exe):
            raise RuntimeError(f"spawn-fcgi (idem-provider) exited {p.returncode}: "
                               f"{p.stderr.decode(errors='replace')[-300:]}\n"
                               + inst.log_tail())

    def stop_backend(self):
        pids = pids_of_exe(self.exe)
        kill_pids(pids, signal.SIGKILL)
        wait_gone(pids, DEADLINE.timeout(30))

    def restart_backend(self, extra=None):
        self.stop_backend()
        self.start_backend(extra)

    def start(self, extra=None):
        self.start_backend(extra)
        self.server = self.inst.popen(["lighttpd", "-D", "-f", self.conf],
                                      "lighttpd-provider.out")
        end = min(time.monotonic() + 15, DEADLINE.end)
        while time.monotonic() < end:
            if self.server.poll() is not None:
                break
            try:
                if self.stats() is not None:
                    return
            except (OSError, http.client.HTTPException, ValueError):
                pass
            time.sleep(0.05)
        raise RuntimeError("the provider service did not answer GET /stats\n"
                           + self.inst.log_tail())

    def stop(self):
        p, self.server = self.server, None
        if p is not None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=8)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=5)
        self.stop_backend()

    def stats(self):
        """GET /stats: {"charges": N, "declines": N, "refunds": N}."""
        r = http_request(self.port, "GET", "/stats")
        if r.status != 200:
            raise ValueError(f"GET /stats: {r.brief()}")
        return json.loads(r.body)


class Instance:
    """One server with its workers, state and rendered configuration."""
    uses_spawn_fcgi = False
    # Whether the workers can be pointed at the provider service (their
    # environment comes from idem_env or from a template naming
    # @PROVIDER_URL@).
    provider_service_ok = True

    def __init__(self, name, build, args):
        self.name = name
        self.build = build
        self.args = args
        self.workers = args.workers
        self.user, self.group, self.uid, self.gid = run_account()
        self.root = tempfile.mkdtemp(prefix=f"idem-live-{name}-", dir=temp_base())
        os.chmod(self.root, 0o755)
        self.server = None          # Popen of the web server
        self.provider = None        # ProviderService, when the workers use one
        self.logs = []
        self.bindir = os.path.join(self.root, "bin")
        self.exe = os.path.join(self.bindir, "idem-fcgi")
        self.state = os.path.join(self.root, "state")
        self.port = free_port()
        # "metrics" is the monitoring account (IDEM_METRICS_ACCOUNT in etc/),
        # the only one /metrics answers.
        self.secrets = {"acct_alpha": "sk_live_" + secrets.token_hex(16),
                        "acct_beta": "sk_live_" + secrets.token_hex(16),
                        # only the live suite's cursor walk pays from it
                        "acct_pages": "sk_live_" + secrets.token_hex(16),
                        "metrics": "sk_live_" + secrets.token_hex(16)}
        INSTANCES.append(self)
        self._setup()

    # -- set-up -------------------------------------------------------
    def _make_state(self, state):
        os.makedirs(os.path.join(state, "db"))
        os.makedirs(os.path.join(state, "provider"))
        # The store is sealed at rest (IDEM_SECRET_FILE in etc/idem.env).
        subprocess.run([os.path.join(self.bindir, "idemctl"), "new-secret",
                        os.path.join(state, "secret")], check=True,
                       stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=60)
        with open(os.path.join(state, "keys"), "w") as f:
            for acct, sec in self.secrets.items():
                f.write(f"{acct} {hashlib.sha256(sec.encode()).hexdigest()}\n")

    def _setup(self):
        os.makedirs(self.bindir)
        for prog in ("idem-fcgi", "idemctl", "idem-provider"):
            src = os.path.join(self.build, prog)
            if not os.access(src, os.X_OK):
                raise RuntimeError(f"{src} missing or not executable")
            shutil.copy2(src, os.path.join(self.bindir, prog))
        self._make_state(self.state)
        self.www = os.path.join(self.root, "www")
        # The web root as the quick start serves it: the pages the
        # package ships (www/) and the demo's (demo/).
        os.makedirs(self.www)
        for d in (WWW, DEMO):
            if os.path.isdir(d):
                shutil.copytree(d, self.www, dirs_exist_ok=True)
        self.mapping = {
            "PORT": self.port, "ROOT": self.root, "BINDIR": self.bindir,
            "SBINDIR": self.bindir,
            "STATE": self.state, "WWW": self.www, "USER": self.user,
            "GROUP": self.group, "WORKERS": self.workers,
            "PROVIDER_LATENCY_MS": self.args.latency_ms,
            # Which provider the workers are told to use: the simulated
            # one unless the instance runs the provider service.
            "PROVIDER": "simulated",
            "PROVIDER_URL": "",
            "PROVIDER_TIMEOUT_MS": getattr(self.args, "provider_timeout_ms", 10000),
        }
        if getattr(self.args, "provider_service", False) and self.provider_service_ok:
            self.provider = ProviderService(self)
            self.mapping["PROVIDER"] = "service"
            self.mapping["PROVIDER_URL"] = self.provider.url
        self.idem_env = parse_env_file(
            render(os.path.join(ETC, "idem.env"), self.mapping,
                   os.path.join(self.root, "idem.env")))
        if self.provider is None:
            self.idem_env["IDEM_PROVIDER"] = "simulated"
        else:
            self.idem_env["IDEM_PROVIDER_URL"] = self.provider.url
            self.idem_env["IDEM_PROVIDER_TIMEOUT_MS"] = str(
                self.mapping["PROVIDER_TIMEOUT_MS"])
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
        if self.provider is not None and self.provider.server is None:
            self.provider.start()
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
        """Every worker stopped (terminate); True if all exited on SIGTERM."""
        pids = self.worker_pids()
        return terminate(pids, grace), pids

    def stop(self):
        self.stop_server()
        self.stop_workers(grace=3.0)

    def restart_workers(self):
        """Every worker replaced: returns the PIDs before."""
        raise NotImplementedError

    def stop_until_gone(self, pids):
        """stop(), then wait for the workers in pids to be gone.  A killed
        worker takes a while to go (every thread leaves, then its memory
        is torn down, which is slow for a ThreadSanitizer build on a busy
        machine), and once its main thread has left, worker_pids() no
        longer finds it, so stop_workers() does not wait for it."""
        self.stop()
        wait_gone(pids, DEADLINE.timeout(30))

    def cleanup(self):
        try:
            self.stop()
            if self.provider is not None:
                self.provider.stop()
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
        end = time.monotonic() + DEADLINE.timeout(15)
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
        self.stop_until_gone(before)
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
        terminate(pids_of_exe(self.basic_exe), 3.0)

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
        if self.provider is not None and self.provider.server is None:
            self.provider.start()
        self.start_server()
        self.wait_ready(self.port)
        self.wait_ready(self.auth_port)

    def restart_workers(self):
        before = self.worker_pids()
        self.stop_until_gone(before)
        self.start()
        return before, None


class ProviderOnly(Instance):
    """The provider service alone (its lighttpd and idem-provider), for
    app hosts set up elsewhere that call it at .provider.url; its own
    temporary directory, like any instance.  args.provider_service must
    be true."""

    def configure(self):
        if self.provider is None:
            raise RuntimeError("ProviderOnly without args.provider_service")

    def start(self):
        self.provider.start()

    def stop(self):
        self.provider.stop()

    def worker_pids(self):
        return []


CLASSES = {"lighttpd": Lighttpd, "lighttpd-spawn": LighttpdSpawn,
           "apache": Apache, "nginx": Nginx}

def cleanup_all():
    for inst in list(INSTANCES):
        try:
            inst.cleanup()
        except Exception:               # noqa: BLE001
            pass
    INSTANCES.clear()
    reap()
