#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The built packages installed into a scratch root and started there.

tests/package.test runs this as root inside new mount and PID namespaces
(unshare --mount --pid --fork --mount-proc): every mount made here and
every process started in the scratch root end with it.

The scratch root is an overlay of this machine's own root file system
with a throwaway upper layer on tmpfs, and a copy of its dpkg database:
the packages the built ones depend on are installed here already, so
"dpkg -i" inside a chroot of it checks the dependencies, unpacks, and runs
the maintainer scripts as on a real system, and all it writes lands in the
upper layer.  There:

  - /usr/share/idem/www holds the problem pages and the policy page,
    not the quick start's demo page and its demo keys;
  - the postinst made the system account idem and /var/lib/idem
    (idem:idem, 0750), and the sealing key file when idem.env names one;
    /etc/idem/idem.env is a conffile; every unit of etc/systemd/ is
    installed, substituted, not enabled, passes systemd-analyze verify,
    and every service is rated 2.5 or lower ("OK") by systemd-analyze
    security;
  - idem-provider and idem-fcgi are started as systemd would on the first
    connection to their .socket units: the socket with its owner and
    mode, the service's ExecStart= as its User=, with its Environment=,
    EnvironmentFile=, StateDirectory= and UMask=, the socket on standard
    input and the output on a stand-in for journald's stdout socket
    (systemd is not running here, so the sandbox itself is not applied);
    each behind lighttpd configured from the installed example, the
    workers charging the provider service: a payment, its replay, a key
    reused with another amount and the problem page it links to are
    answered, the installed idemctl reads the payment from the store as
    the idem account, every Type=oneshot unit (what the timers start)
    runs as its unit says, and SIGTERM stops both services;
  - pkg-config finds idem.pc, and a program on idem.h links against the
    installed libidem (shared, and static from libidem.a), as does the
    packaged examples/orders.c, which answers a CGI request;
  - purging the packages succeeds, removes the programs and the
    conffile, and leaves the store.

Prints "ok - ..." and "FAIL - ..." lines, then "scratch: N passed, N
failed".
"""

import argparse
import fcntl
import glob
import hashlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from lib.common import DEADLINE, Results, free_port  # noqa: E402
from lib.servers import parse_env_file, render  # noqa: E402
from lib.web import http_request  # noqa: E402

R = Results()
SECRET = "sk_test_package_6c1f0e9a7d3b5e28"
ACCOUNT = "acct_pkg"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def run(argv, **kw):
    """argv's completed process, output and errors as text together."""
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.STDOUT)
    kw.setdefault("timeout", DEADLINE.timeout(120))
    return subprocess.run(argv, text=True, **kw)


def check(name, p, want_rc=0):
    """ok when p ended with want_rc, else a failure showing its output."""
    if p.returncode == want_rc:
        R.ok(name)
        return True
    R.fail(name, f"exit {p.returncode}\n{p.stdout[-3000:]}")
    return False


class Root:
    """The scratch root: an overlay of / in the work directory."""

    def __init__(self, work):
        ov = os.path.join(work, "overlay")
        os.makedirs(ov)
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", ov], check=True)
        for d in ("up", "work", "root"):
            os.mkdir(os.path.join(ov, d))
        self.path = os.path.join(ov, "root")
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                        f"lowerdir=/,upperdir={ov}/up,workdir={ov}/work",
                        self.path], check=True)
        subprocess.run(["mount", "-t", "proc", "proc", self.at("/proc")],
                       check=True)
        subprocess.run(["mount", "--rbind", "/dev", self.at("/dev")],
                       check=True)
        for d in ("/run", "/tmp"):
            subprocess.run(["mount", "-t", "tmpfs", "tmpfs", self.at(d)],
                           check=True)
        self.copy_dpkg_database()

    def at(self, path):
        return self.path + path

    def copy_dpkg_database(self):
        """A copy taken while no apt or dpkg on the host changes it: the
        overlay would otherwise show a half-written database."""
        lock = os.open("/var/lib/dpkg/lock-frontend", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.lockf(lock, fcntl.LOCK_EX)
            subprocess.run(["rm", "-rf", self.at("/var/lib/dpkg")], check=True)
            subprocess.run(["cp", "-a", "/var/lib/dpkg", self.at("/var/lib/dpkg")],
                           check=True)
        finally:
            os.close(lock)

    def run(self, argv, user=None, env=None, **kw):
        """argv in the chroot, as root or as user, with env alone (and PATH)."""
        cmd = ["chroot"]
        if user:
            cmd.append(f"--userspec={user}:{user}")
        cmd += [self.path, "env", "-i", f"PATH={PATH}"]
        cmd += [f"{k}={v}" for k, v in (env or {}).items()]
        return run(cmd + list(argv), **kw)

    def read(self, path):
        with open(self.at(path), errors="replace") as f:
            return f.read()


class Journal:
    """A stand-in for journald's stdout socket, which systemd-cat connects
    to: everything the workers write to it, header lines included."""

    def __init__(self, root):
        path = root.at("/run/systemd/journal/stdout")
        os.makedirs(os.path.dirname(path))
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.path = path
        os.chmod(path, 0o666)
        self.sock.listen(16)
        self.data = []
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self.read, args=(conn,), daemon=True).start()

    def read(self, conn):
        while True:
            b = conn.recv(65536)
            if not b:
                return
            with self.lock:
                self.data.append(b)

    def text(self):
        with self.lock:
            return b"".join(self.data).decode("utf-8", "replace")

    def stream(self, identifier):
        """A connection as systemd makes for StandardOutput=journal: the
        stream's header (identifier, unit, priority, level prefix and
        forwarding flags), then what the service writes."""
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(self.path)
        c.sendall(f"{identifier}\n\n6\n0\n0\n0\n0\n".encode())
        c.shutdown(socket.SHUT_RD)
        return c


def unit_dir(root):
    for d in ("/lib/systemd/system", "/usr/lib/systemd/system"):
        if os.path.exists(root.at(d + "/idem-fcgi.service")):
            return d
    return None


def parse_unit(text, want="[Service]"):
    """The settings of a unit's section want (the last of each name), its
    continued lines joined."""
    text = re.sub(r"\\\n", " ", text)
    section, out = None, {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == want and "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def install(root, debs):
    names = sorted(d for d in glob.glob(os.path.join(debs, "*.deb"))
                   if "-dbgsym_" not in d)
    os.makedirs(root.at("/tmp/debs"))
    for d in names:
        subprocess.run(["cp", d, root.at("/tmp/debs/")], check=True)
    inside = ["/tmp/debs/" + os.path.basename(d) for d in names]
    p = root.run(["dpkg", "-i"] + inside,
                 env={"DEBIAN_FRONTEND": "noninteractive"})
    return check("dpkg -i " + " ".join(os.path.basename(d) for d in names), p)


def check_account(root):
    p = root.run(["getent", "passwd", "idem"])
    fields = p.stdout.strip().split(":")
    problems = []
    if p.returncode != 0 or len(fields) != 7:
        problems.append(f"no passwd entry: {p.stdout!r}")
    else:
        if not 0 < int(fields[2]) < 1000:
            problems.append(f"uid {fields[2]} is not a system uid")
        if fields[5] != "/var/lib/idem":
            problems.append(f"home {fields[5]}")
        if fields[6] not in ("/usr/sbin/nologin", "/sbin/nologin"):
            problems.append(f"shell {fields[6]}")
    if root.run(["getent", "group", "idem"]).returncode != 0:
        problems.append("no group idem")
    R.record("postinst: system account idem (home /var/lib/idem, nologin)",
             problems)
    p = root.run(["stat", "-c", "%U:%G %a %F", "/var/lib/idem"])
    want = "idem:idem 750 directory"
    if p.stdout.strip() == want:
        R.ok(f"postinst: /var/lib/idem is {want}")
    else:
        R.fail(f"postinst: /var/lib/idem is {want}", p.stdout)


def check_config(root):
    p = root.run(["dpkg-query", "-W", "-f=${Conffiles}", "idem"])
    if re.search(r"^ /etc/idem/idem\.env [0-9a-f]{32}$", p.stdout, re.M):
        R.ok("/etc/idem/idem.env is a conffile")
    else:
        R.fail("/etc/idem/idem.env is a conffile", p.stdout)
    env = parse_env_file(root.at("/etc/idem/idem.env"))
    left = [f"{k}={v}" for k, v in env.items() if "@" in v]
    if not left and env.get("IDEM_DB_DIR", "").startswith("/var/lib/idem/"):
        R.ok("idem.env: placeholders filled, store under /var/lib/idem")
    else:
        R.fail("idem.env: placeholders filled, store under /var/lib/idem",
               " ".join(left) or str(env))
    secret = env.get("IDEM_SECRET_FILE")
    if secret:
        p = root.run(["stat", "-c", "%U:%G %a", secret])
        if p.stdout.strip() == "root:idem 640":
            R.ok(f"postinst: {secret} made, root:idem 640")
        else:
            R.fail(f"postinst: {secret} made, root:idem 640", p.stdout)
    return env


def check_units(root, srcdir):
    d = unit_dir(root)
    want = sorted(os.path.basename(u) for u in
                  glob.glob(os.path.join(srcdir, "etc/systemd/*.service")) +
                  glob.glob(os.path.join(srcdir, "etc/systemd/*.socket")) +
                  glob.glob(os.path.join(srcdir, "etc/systemd/*.timer")))
    missing = [u for u in want if d is None or
               not os.path.exists(root.at(f"{d}/{u}"))]
    if want and not missing:
        R.ok(f"units installed in {d}: {' '.join(want)}")
    else:
        R.fail("units of etc/systemd installed", f"missing: {missing or want}")
        return None
    problems = []
    for u in want:
        live = [ln for ln in root.read(f"{d}/{u}").splitlines()
                if not ln.startswith("#")]
        if re.search(r"@[A-Z_]+@", "\n".join(live)):
            problems.append(f"{u}: placeholder left")
        state = root.run(["systemctl", "is-enabled", u]).stdout.strip()
        # indirect: a service enabled only through its socket (Also=).
        if state not in ("disabled", "static", "indirect"):
            problems.append(f"{u}: {state}")
    R.record("units: substituted, none enabled", problems)
    p = root.run(["systemd-analyze", "verify"] + [f"{d}/{u}" for u in want])
    check("systemd-analyze verify (in the scratch root)", p)
    return (d, want)


EXPOSURE_MAX = 2.5


def check_security(root, udir, units):
    """systemd-analyze security of every installed service, offline (no
    systemd runs here): each rated EXPOSURE_MAX or lower, "OK" on
    systemd's scale, its rating printed; above it, the settings that
    cost most are shown."""
    for name in units:
        if not name.endswith(".service"):
            continue
        p = root.run(["systemd-analyze", "security", "--offline=true",
                      "--no-pager", f"{udir}/{name}"])
        m = re.search(r"Overall exposure level for \S+: ([0-9.]+) (\w+)",
                      p.stdout)
        if not m:
            R.fail(f"systemd-analyze security {name}", p.stdout[-2000:])
            continue
        level = float(m.group(1))
        title = (f"systemd-analyze security {name}: {m.group(1)} "
                 f"{m.group(2)} (at most {EXPOSURE_MAX})")
        if level <= EXPOSURE_MAX:
            R.ok(title)
            continue
        costs = []
        for ln in p.stdout.splitlines():
            c = re.match(r"^\u2717 (\S+)\s.*\s([0-9.]+)$", ln.strip())
            if c:
                costs.append((float(c.group(2)), ln.strip()))
        costs.sort(reverse=True)
        R.fail(title, "\n".join(ln for _, ln in costs[:15]))


def check_www(root):
    """The web root the package installs: the pages the answers link to
    (the problem types, the key policy) and the OpenAPI description,
    never the quick start's demo page nor the demo API keys it carries."""
    www = root.at("/usr/share/idem/www")
    problems = [f"{f} missing" for f in ("policy.html", "problems/index.html",
                                         "problems/key-reused.html",
                                         "openapi.json")
                if not os.path.isfile(os.path.join(www, f))]
    for d, _, files in os.walk(www):
        for f in files:
            path = os.path.join(d, f)
            name = os.path.relpath(path, www)
            if f.startswith("demo"):
                problems.append(f"{name}: the demo page")
            with open(path, "rb") as fh:
                if re.search(rb"sk_test_|sk_live_", fh.read()):
                    problems.append(f"{name}: carries an API key")
    R.record("/usr/share/idem/www: problem pages, policy and OpenAPI "
             "description, no demo page or demo keys", problems)


def unit_command(root, unit):
    """A unit's ExecStart= as argv, its environment files' variables, and
    the account it runs as (None: root)."""
    env = {}
    for f in unit.get("EnvironmentFile", "").split():
        path = root.at(f.lstrip("-"))
        if os.path.exists(path) or not f.startswith("-"):
            env.update(parse_env_file(path))
    argv = shlex.split(unit["ExecStart"].lstrip("@-:+!"))
    return argv, env, unit.get("User")


def account_ids(root, user, group):
    """The uid of user and gid of group in the scratch root."""
    uid = root.run(["id", "-u", user]).stdout.strip()
    gid = root.run(["getent", "group", group]).stdout.strip().split(":")
    return int(uid), int(gid[2])


def make_socket(root, name, sock_unit):
    """What systemd does for a .socket unit with ListenStream= a path and
    Accept=no: the directory, the listening socket with its owner, group
    and mode.  Returns the socket and its path inside the root."""
    path = sock_unit["ListenStream"]
    os.makedirs(root.at(os.path.dirname(path)), exist_ok=True)
    os.chmod(root.at(os.path.dirname(path)),
             int(sock_unit.get("DirectoryMode", "0755"), 8))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(root.at(path))
    uid, gid = account_ids(root, sock_unit.get("SocketUser", "root"),
                           sock_unit.get("SocketGroup", "root"))
    os.chown(root.at(path), uid, gid)
    os.chmod(root.at(path), int(sock_unit.get("SocketMode", "0666"), 8))
    s.listen(128)
    return s, path


def start_unit(root, udir, name, journal):
    """What systemd does for NAME.socket and NAME.service on the first
    connection: the socket, the state directory, the service's ExecStart=
    as its User= with its environment, UMask=, the socket on standard
    input (StandardInput=socket) and standard output and error on the
    journal.  Returns (the process, the socket's path), or None."""
    sock_unit = parse_unit(root.read(f"{udir}/{name}.socket"), "[Socket]")
    unit = parse_unit(root.read(f"{udir}/{name}.service"))
    problems = []
    if sock_unit.get("Accept", "no") != "no":
        problems.append(f"{name}.socket: Accept={sock_unit['Accept']}")
    if unit.get("StandardInput") != "socket":
        problems.append(f"{name}.service: StandardInput={unit.get('StandardInput')}")
    if unit.get("StandardOutput") != "journal":
        problems.append(f"{name}.service: StandardOutput={unit.get('StandardOutput')}")
    if problems:
        R.fail(f"{name}: socket-activated", "\n".join(problems))
        return None
    listener, path = make_socket(root, name, sock_unit)
    user = unit.get("User")
    state = unit.get("StateDirectory")
    if state:
        d = root.at("/var/lib/" + state)
        os.makedirs(d, exist_ok=True)
        os.chown(d, *account_ids(root, user, unit.get("Group", user)))
        os.chmod(d, int(unit.get("StateDirectoryMode", "0755"), 8))
    env = {}
    for assign in shlex.split(unit.get("Environment", "")):
        k, v = assign.split("=", 1)
        env[k] = v
    argv, files_env, _ = unit_command(root, unit)
    env.update(files_env)
    log = journal.stream(unit.get("SyslogIdentifier", name))
    umask = int(unit.get("UMask", "0022"), 8)
    cmd = ["chroot", f"--userspec={user}:{unit.get('Group', user)}",
           root.path, "env", "-i", f"PATH={PATH}"]
    cmd += [f"{k}={v}" for k, v in env.items()]
    proc = subprocess.Popen(cmd + argv, stdin=listener.fileno(), stdout=log,
                            stderr=log, preexec_fn=lambda: os.umask(umask))
    listener.close()
    log.close()
    R.ok(f"{name}.socket made ({sock_unit.get('SocketUser', 'root')}:"
         f"{sock_unit.get('SocketGroup', 'root')} {sock_unit.get('SocketMode')}), "
         f"{name}.service started on it as {user}: {' '.join(argv)}")
    return proc, path


def start_lighttpd(root, example, sock, probe, title):
    """lighttpd as the installed example configures it, in the chroot,
    reaching sock; (the process, its port) once probe (a path) answers
    200, else (the process, None)."""
    base = os.path.splitext(example)[0]
    conf = root.at(f"/tmp/{base}/lighttpd.conf")
    os.makedirs(os.path.dirname(conf) + "/provider-www")
    text = root.read(f"/usr/share/doc/idem/examples/lighttpd/{example}")
    with open(conf + ".in", "w") as f:
        f.write(text.replace(f"@ROOT@/{os.path.basename(sock)}", sock))
    # lighttpd opens its log after it has become www-data.
    root.run(["chown", "-R", "www-data:www-data", f"/tmp/{base}"])
    port = free_port()
    render(conf + ".in", {"PORT": port, "PROVIDER_PORT": port,
                          "ROOT": f"/tmp/{base}",
                          "WWW": "/usr/share/idem/www", "USER": "www-data",
                          "GROUP": "www-data"}, conf)
    proc = subprocess.Popen(["chroot", root.path, "lighttpd", "-D", "-f",
                             f"/tmp/{base}/lighttpd.conf"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        try:
            if http_request(port, "GET", probe).status == 200:
                R.ok(f"{title}: GET {probe} 200")
                return proc, port
        except OSError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    if proc.poll() is None:
        proc.terminate()
    why = proc.communicate(timeout=10)[1]
    for log in glob.glob(root.at(f"/tmp/{base}/*error.log")):
        with open(log, errors="replace") as f:
            why += f.read()
    R.fail(f"{title}: GET {probe} 200", why)
    return proc, None


def pay(port, amount, key="pkg-order-1"):
    return http_request(port, "POST", "/payments",
                        body=f'{{"amount": {amount}, "currency": "EUR"}}',
                        headers={"Authorization": f"Bearer {SECRET}",
                                 "Idempotency-Key": f'"{key}"',
                                 "Content-Type": "application/json"})


def payments(root, port, env):
    first = pay(port, "12.34")
    loc = first.header("Location") or ""
    if first.status == 201 and loc.startswith("/payments/"):
        R.ok(f"POST /payments: 201, Location {loc}")
    else:
        R.fail("POST /payments: 201", first.brief())
        return
    again = pay(port, "12.34")
    if (again.status == 201 and again.header("Idempotent-Replayed") == "true"
            and again.body == first.body and again.header("Location") == loc):
        R.ok("the retry: the same 201 replayed")
    else:
        R.fail("the retry: the same 201 replayed", again.brief())
    other = pay(port, "99.00")
    ptype = ""
    try:
        ptype = other.json().get("type", "")
    except ValueError:
        pass
    page = http_request(port, "GET", ptype) if ptype.startswith("/") else None
    if other.status == 422 and page is not None and page.status == 200:
        R.ok(f"another amount: 422, its type {ptype} served from /usr/share/idem/www")
    else:
        R.fail("another amount: 422 with a served type page",
               other.brief() + (f"; {ptype}: {page.status}" if page else ""))
    desc = http_request(port, "GET", "/openapi.json")
    ctype = (desc.header("Content-Type") or "").split(";")[0].strip()
    if desc.status == 200 and ctype == "application/json":
        R.ok("/openapi.json served as application/json from /usr/share/idem/www")
    else:
        R.fail("/openapi.json served as application/json", desc.brief())
    p = root.run(["idemctl", "stats"], user="idem", env=env)
    stats = dict(re.findall(r"^(\w+): (\d+)$", p.stdout, re.M))
    if p.returncode == 0 and stats.get("payments") == "1" and \
            stats.get("charges") == "1":
        R.ok("idemctl stats as idem: 1 payment, 1 charge")
    else:
        R.fail("idemctl stats as idem: 1 payment, 1 charge", p.stdout)
    p = root.run(["find", "/var/lib/idem", "!", "-user", "idem"])
    if p.returncode == 0 and not p.stdout.strip():
        R.ok("everything under /var/lib/idem belongs to idem")
    else:
        R.fail("everything under /var/lib/idem belongs to idem", p.stdout)


def oneshots(root, udir, units):
    """Every Type=oneshot service (what the timers start) run once as its
    unit says, on the store the workers use."""
    for name in units:
        if not name.endswith(".service"):
            continue
        unit = parse_unit(root.read(f"{udir}/{name}"))
        if unit.get("Type") != "oneshot":
            continue
        argv, env, user = unit_command(root, unit)
        check(f"{name}: {' '.join(argv)} as {user or 'root'}",
              root.run(argv, user=user, env=env))


def check_log(journal):
    text = journal.text()
    if "idem-fcgi\n" in text and re.search(r"POST /payments 201", text):
        R.ok("request log reaches the journal (StandardError=journal)")
    else:
        R.fail("request log reaches the journal (StandardError=journal)",
               text[-1500:] or "nothing received")


def stop_service(name, proc):
    """What systemctl stop does: SIGTERM to the main process, which
    exits; still there after TimeoutStopSec= (30 s here) is a failure."""
    if proc.poll() is not None:
        R.fail(f"{name} stops on SIGTERM", f"it had ended: exit {proc.returncode}")
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(DEADLINE.timeout(30))
        R.ok(f"{name} stops on SIGTERM")
    except subprocess.TimeoutExpired:
        R.fail(f"{name} stops on SIGTERM", "still running after 30 s")
        proc.kill()
        proc.wait()


LIB_PROGRAM = r"""
#include <idem.h>
#include <stdio.h>
#include <string.h>

int
main(void)
{
	const char *s = idem_strerror(IDEM_ELOST);

	if (s == NULL || *s == '\0' || strcmp(s, idem_strerror(IDEM_OK)) == 0)
		return 1;
	printf("%s\n", s);
	return 0;
}
"""


def library(root):
    with open(root.at("/tmp/lib.c"), "w") as f:
        f.write(LIB_PROGRAM)
    p = root.run(["sh", "-ec",
                  "cc -Wall -Werror -o /tmp/lib /tmp/lib.c "
                  "$(pkg-config --cflags --libs idem) && /tmp/lib && "
                  "ldd /tmp/lib | grep -o '/[^ ]*/libidem\\.so\\.[0-9]*' | "
                  "xargs realpath | xargs dpkg -S"])
    if p.returncode == 0 and re.search(r"^libidem1(:\w+)?: ", p.stdout, re.M):
        R.ok("idem.h + pkg-config: a program runs on libidem1's libidem.so")
    else:
        R.fail("idem.h + pkg-config: a program runs on libidem1's libidem.so",
               p.stdout)
    p = root.run(["sh", "-ec",
                  "cc -Wall -Werror -o /tmp/lib-static /tmp/lib.c "
                  "$(pkg-config --cflags idem) "
                  "$(pkg-config --variable=libdir idem)/libidem.a "
                  "-Wl,--as-needed "
                  "$(pkg-config --libs $(pkg-config --print-requires-private idem)) "
                  "-pthread && "
                  "/tmp/lib-static && ! readelf -d /tmp/lib-static | "
                  "grep 'NEEDED.*libidem'"])
    check("libidem.a, its Requires.private shared: links and runs", p)
    p = root.run(["sh", "-ec",
                  "cc -o /tmp/orders /usr/share/doc/libidem-dev/examples/orders.c "
                  "$(pkg-config --cflags --libs idem) -lfcgi && mkdir /tmp/orders.db && "
                  "printf '{\"amount\":5}' | ORDERS_DB=/tmp/orders.db "
                  "REQUEST_METHOD=POST SCRIPT_NAME=/orders "
                  "CONTENT_TYPE=application/json CONTENT_LENGTH=12 "
                  "HTTP_IDEMPOTENCY_KEY=pkg-1 /tmp/orders"])
    if p.returncode == 0 and p.stdout.startswith("Status: 201"):
        R.ok("the packaged examples/orders.c builds and answers 201")
    else:
        R.fail("the packaged examples/orders.c builds and answers 201", p.stdout)


def purge(root, names):
    p = root.run(["dpkg", "--purge"] + names)
    if not check("dpkg --purge " + " ".join(names), p):
        return
    problems = [f"{f} left" for f in
                ("/usr/sbin/idem-fcgi", "/usr/sbin/idem-provider",
                 "/usr/bin/idemctl", "/etc/idem/idem.env",
                 "/usr/include/idem.h")
                if os.path.lexists(root.at(f))]
    if not os.path.isdir(root.at("/var/lib/idem/db")):
        problems.append("/var/lib/idem/db (the payments) removed")
    R.record("purged: programs, header and conffile gone, the store kept",
             problems)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--debs", required=True)
    ap.add_argument("--srcdir", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--deadline", type=float, default=180)
    a = ap.parse_args()
    DEADLINE.reset(a.deadline)
    root = Root(a.work)
    if not install(root, a.debs):
        return
    servers = []
    try:
        check_account(root)
        check_www(root)
        env = check_config(root)
        if env.get("IDEM_PROVIDER") or env.get("IDEM_PROVIDER_URL"):
            R.fail("idem.env names no provider: the operator chooses one",
                   "IDEM_PROVIDER=%s IDEM_PROVIDER_URL=%s" % (
                       env.get("IDEM_PROVIDER"), env.get("IDEM_PROVIDER_URL")))
        else:
            R.ok("idem.env names no provider: the operator chooses one")
        udir, units = check_units(root, a.srcdir) or (None, [])
        if udir:
            check_security(root, udir, units)
        digest = root.run(["idemctl", "hash-key", SECRET]).stdout.strip()
        if digest == hashlib.sha256(SECRET.encode()).hexdigest():
            R.ok("idemctl hash-key: the keys file's digest")
        else:
            R.fail("idemctl hash-key: the keys file's digest", digest)
        with open(root.at(env.get("IDEM_KEYS_FILE", "/etc/idem/keys")), "a") as f:
            f.write(f"{ACCOUNT} {digest}\n")
        journal = Journal(root)
        # The provider service as its units start it, behind lighttpd as
        # the installed example has it; the workers charge it.
        provider = start_unit(root, udir, "idem-provider", journal) \
            if udir else None
        if provider:
            web, pport = start_lighttpd(root, "idem-provider.conf",
                                        provider[1], "/stats",
                                        "lighttpd + the packaged provider")
            servers.append(web)
            if pport:
                url = f"http://127.0.0.1:{pport}"
                with open(root.at("/etc/idem/idem.env"), "a") as f:
                    f.write(f"IDEM_PROVIDER=service\nIDEM_PROVIDER_URL={url}\n")
                env.update(IDEM_PROVIDER="service", IDEM_PROVIDER_URL=url)
        fcgi = start_unit(root, udir, "idem-fcgi", journal) \
            if env.get("IDEM_PROVIDER") else None
        if fcgi:
            web, port = start_lighttpd(root, "idem-external.conf", fcgi[1],
                                       "/healthz",
                                       "lighttpd + the packaged workers")
            servers.append(web)
            if port:
                payments(root, port, env)
                check_log(journal)
                oneshots(root, udir, units)
            stop_service("idem-fcgi.service", fcgi[0])
        if provider:
            stop_service("idem-provider.service", provider[0])
        library(root)
    finally:
        for web in servers:
            web.terminate()
            web.wait(10)
    purge(root, ["idem", "libidem-dev", "libidem1"])


if __name__ == "__main__":
    try:
        main()
    except Exception as e:      # a crash is one failure, with its reason
        R.fail("scratch root", repr(e))
    sys.exit(R.summary("scratch"))
