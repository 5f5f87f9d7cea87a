#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""./quickstart serve while another one runs: refused, and the first
untouched; and what each command installs.

    python3 tests/quickstart/run.py --build BUILD_DIR [--keep]

Two scratch checkouts, each the quickstart script, etc/, www/ and demo/ of the
source tree and a build/ that holds BUILD_DIR's idem-fcgi, idemctl and
idem-provider behind a Makefile that only says it compiles two files (so
quickstart's build step builds nothing), with a dpkg-query on PATH that says every package is
installed.  One "./quickstart serve" (A) serves from the first on two free
ports; then, one after another, a second serve from the same checkout on
the same ports, on other ports (the state directory is A's), from the
other checkout on A's port and on A's provider port, and a serve-cluster
on A's port.  Each must exit non-zero at once, saying what is in use,
without serving; after each, A must still answer GET /healthz with 200
from the same workers.  Then A is stopped by its pid (SIGTERM; its
servers and workers must then be gone), and a serve in its checkout starts
again: the claim ended with the run.

First, "./quickstart packages COMMAND": serve's list has none of the test
suites' tools (Apache, nginx, Chromium, clang, valgrind, lintian) nor
PostgreSQL and Patroni, serve-cluster's has those two, check's all;
bench's has check's and wrk and redis-server (the peers' store), which no
other command installs.  The
first serve says its build is the first and prints a dot a file compiled;
the last one's build is not called the first.

Then five fresh starts of "./quickstart serve-cluster" in a row, from a
third scratch checkout with an empty var/cluster each time: etcd and
three Patroni nodes started at once, so that any of them may win the
bootstrap (the leader is noted).  Each must answer a payment with 201 on
the first host and replay it, 201 with Idempotent-Replayed, on the
second, which needs the database created and migrated whichever node
leads and every node to have it (the hosts' URI names all three, and a
standby without the database ends libpq's search).  Then it is stopped by
its pid (SIGTERM: it stops the hosts, Patroni, PostgreSQL and etcd; none
of the processes of its var/cluster may be left) and var/cluster wiped.

Every process is stopped by pid: A by SIGTERM to its quickstart, and
whatever of it is left by the pids in its pid files (a cluster's by the
pids whose command line names its var/cluster).  The last line is
"quickstart: N passed, M failed".
"""

import argparse
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib.common import (DEADLINE, Results, free_port, note,  # noqa: E402
                        proc_alive, wait_gone)
from lib.servers import temp_base  # noqa: E402

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = Results("quickstart ")
PROGRAMS = ("idem-fcgi", "idemctl", "idem-provider")
# What only the test suites use: serve must not install any of these, and
# serve-cluster only its database (PostgreSQL under Patroni).
TEST_ONLY = ("apache2", "nginx-light", "chromium", "clang", "valgrind",
             "lintian", "python3-jsonschema", "npm")
CLUSTER_ONLY = ("postgresql", "patroni")
# What only ./quickstart bench uses: the load generator, and the Redis the
# Node.js peers of tests/bench/peers/ store their keys in.
BENCH_ONLY = ("wrk", "redis-server")


def packages(command):
    """The Debian packages "./quickstart packages COMMAND" names, or why
    there are none."""
    r = subprocess.run([os.path.join(SRC, "quickstart"), "packages", command],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=DEADLINE.timeout(30))
    if r.returncode != 0:
        return None, f"exit {r.returncode}: {(r.stdout + r.stderr).strip()[-400:]!r}"
    return r.stdout.split(), None


def check_packages():
    """Each command installs what it runs: serve neither the test tools
    nor the cluster's database, serve-cluster the database and not the
    test tools, check everything."""
    got = {}
    for command in ("serve", "serve-cluster", "check", "bench"):
        got[command], why = packages(command)
        if why:
            RESULTS.record(f"./quickstart packages {command}", [why])
    if got["serve"] is not None:
        RESULTS.record("serve installs neither the test tools nor PostgreSQL",
                       [f"serve installs {p}" for p in TEST_ONLY + CLUSTER_ONLY
                        if p in got["serve"]] +
                       [f"serve lacks {p}" for p in ("lighttpd", "spawn-fcgi", "curl")
                        if p not in got["serve"]])
    if got["serve-cluster"] is not None:
        RESULTS.record("serve-cluster installs PostgreSQL and Patroni, no test tools",
                       [f"serve-cluster lacks {p}" for p in CLUSTER_ONLY
                        if p not in got["serve-cluster"]] +
                       [f"serve-cluster installs {p}" for p in TEST_ONLY
                        if p in got["serve-cluster"]])
    if got["check"] is not None:
        RESULTS.record("check installs everything",
                       [f"check lacks {p}" for p in TEST_ONLY + CLUSTER_ONLY
                        if p not in got["check"]])
    if got["bench"] is not None:
        RESULTS.record("bench installs check's packages, wrk and the peers' Redis",
                       [f"bench lacks {p}" for p in (got["check"] or []) + list(BENCH_ONLY)
                        if p not in got["bench"]])
    for command in ("serve", "serve-cluster", "check"):
        if got[command] is not None:
            RESULTS.record(f"{command} installs no bench-only package",
                           [f"{command} installs {p}" for p in BENCH_ONLY
                            if p in got[command]])


def scratch_checkout(build, base):
    """A checkout quickstart serves from without building anything."""
    root = tempfile.mkdtemp(prefix="idem-quickstart-", dir=base)
    os.chmod(root, 0o755)
    shutil.copy2(os.path.join(SRC, "quickstart"), root)
    for d in ("etc", "www", "demo"):
        shutil.copytree(os.path.join(SRC, d), os.path.join(root, d))
    # build(): configure executable and newer than configure.ac (absent),
    # build/config.status no older than it, configured with no options.
    stub(os.path.join(root, "configure"), "exit 1\n")
    os.makedirs(os.path.join(root, "build"))
    with open(os.path.join(root, "build", "Makefile"), "w") as f:
        # Two files "compiled", in make's silent rules' words.
        f.write("all:\n\t@echo '  CC       src/a.lo'; echo '  CCLD     idem-fcgi'\n")
    with open(os.path.join(root, "build", "config.status"), "w") as f:
        f.write("")
    with open(os.path.join(root, "build", ".configured-with"), "w") as f:
        f.write("\n")
    for p in PROGRAMS:
        shutil.copy2(os.path.join(build, p), os.path.join(root, "build", p))
    return root


def stub(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def quickstart_env(tools, **ports):
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env["PATH"] = tools + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    env.update({k: str(v) for k, v in ports.items()})
    return env


def healthz(port, path="/healthz"):
    """The status of GET path (by default /healthz), or why none came."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}",
                                    timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError as e:
        return f"no answer ({e})"


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def pids_in(root):
    """The pids in the run's pid files: lighttpd's and spawn-fcgi's."""
    run = os.path.join(root, "var", "run")
    out = {}
    for name in ("lighttpd.pid", "lighttpd-provider.pid", "spawn-fcgi.pid",
                 "spawn-provider.pid"):
        out[name] = [int(x) for x in read(os.path.join(run, name)).split()
                     if x.isdigit()]
    return out


class Serve:
    """One ./quickstart serve, its output in a log, stopped by its pid."""

    def __init__(self, root, env, what="serve"):
        self.root = root
        self.log = os.path.join(root, f"quickstart-{what}-{time.monotonic_ns()}.log")
        with open(self.log, "wb") as out:
            self.p = subprocess.Popen([os.path.join(root, "quickstart"), what],
                                      cwd=root, env=env, stdin=subprocess.DEVNULL,
                                      stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    def output(self):
        return read(self.log)

    def wait_serving(self, port, seconds):
        end = time.monotonic() + DEADLINE.timeout(seconds)
        while time.monotonic() < end:
            if self.p.poll() is not None:
                return f"exited {self.p.returncode}: {self.output()[-1500:]}"
            if "idem is serving" in self.output() and healthz(port) == 200:
                return None
            time.sleep(0.1)
        return f"not serving within {seconds} s: {self.output()[-1500:]}"

    def wait_exit(self, seconds):
        try:
            return self.p.wait(timeout=DEADLINE.timeout(seconds))
        except subprocess.TimeoutExpired:
            return None

    def stop(self, seconds=30):
        """SIGTERM to quickstart (its trap stops what it started); then
        SIGKILL to it and to the pids in its pid files that are left."""
        pids = [p for v in pids_in(self.root).values() for p in v]
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        rc = self.wait_exit(seconds)
        if rc is None:
            self.p.kill()
            self.p.wait(timeout=10)
        left = [p for p in pids if proc_alive(p)]
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_gone(left, DEADLINE.timeout(15))
        return rc, left


# Fresh starts of serve-cluster, and how long each may take to serve
# (etcd, a bootstrap, two base backups, the migration and two hosts: about
# 20 to 30 s here).
CLUSTER_STARTS = 5
CLUSTER_START_SECONDS = 150


def port_free(p):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            return False
    return True


def port_run(n, taken):
    """The first of n consecutive free ports, none of them in taken (which
    then holds them): serve-cluster takes PG_PORT to PG_PORT+2 and so
    on."""
    for _ in range(200):
        p = free_port()
        run = range(p, p + n)
        if p + n <= 65535 and not any(q in taken for q in run) \
                and all(port_free(q) for q in run):
            taken.extend(run)
            return p
    raise RuntimeError(f"no {n} consecutive free ports")


def cluster_pids(root):
    """The pids of the processes whose command line names root's
    var/cluster (etcd, Patroni, PostgreSQL's postmaster), and those named
    in its nodes' postmaster.pid."""
    where = os.path.join(root, "var", "cluster") + "/"
    out = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if where.encode() in f.read():
                    out.add(int(d))
        except OSError:
            pass
    for i in (1, 2, 3):
        pm = read(os.path.join(where, f"node{i}", "data", "postmaster.pid"))
        if pm.split("\n")[0].strip().isdigit():
            out.add(int(pm.split("\n")[0]))
    return sorted(p for p in out if proc_alive(p) and p != os.getpid())


def pay(port, key):
    """POST /payments on 127.0.0.1:port as acct_alice: (status, replayed,
    body), or (why, None, None) when no answer came."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/payments", method="POST",
        data=b'{"amount": 100.00, "currency": "BRL"}',
        headers={"Authorization": "Bearer sk_test_alice_4f9c2b7e1d8a",
                 "Idempotency-Key": f'"{key}"',
                 "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return (r.status, r.headers.get("Idempotent-Replayed"),
                    r.read().decode(errors="replace"))
    except urllib.error.HTTPError as e:
        return (e.code, e.headers.get("Idempotent-Replayed"),
                e.read().decode(errors="replace"))
    except OSError as e:
        return (f"no answer ({e})", None, None)


def pay_until(port, key, seconds):
    """pay() until an answer other than 503 (the store not ready yet),
    within seconds."""
    end = time.monotonic() + DEADLINE.timeout(seconds)
    while True:
        got = pay(port, key)
        if got[0] != 503 or time.monotonic() >= end:
            return got
        time.sleep(0.2)


def cluster_leader(rest):
    """The leader's name in Patroni's GET /cluster on 127.0.0.1:rest."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{rest}/cluster",
                                    timeout=3) as r:
            members = json.loads(r.read()).get("members", [])
    except (OSError, ValueError):
        return None
    return next((m["name"] for m in members if m.get("role") == "leader"), None)


def cluster_start(root, tools, n):
    """One fresh serve-cluster in root: serving, a payment on each host,
    stopped, nothing of it left, var/cluster wiped."""
    shutil.rmtree(os.path.join(root, "var", "cluster"), ignore_errors=True)
    taken = []
    port, provider = port_run(2, taken), port_run(1, taken)
    pg_port, rest, etcd = port_run(3, taken), port_run(3, taken), port_run(2, taken)
    serve = Serve(root, quickstart_env(
        tools, PORT=port, PROVIDER_PORT=provider, PG_PORT=pg_port,
        PATRONI_PORT=rest, ETCD_PORT=etcd), "serve-cluster")
    name = f"serve-cluster, fresh start {n}"
    began = time.monotonic()
    problems = []
    try:
        end = time.monotonic() + DEADLINE.timeout(CLUSTER_START_SECONDS)
        while "idem cluster:" not in serve.output():
            if serve.p.poll() is not None:
                problems.append(f"exited {serve.p.returncode}: "
                                f"{serve.output()[-1500:]!r}")
                break
            if time.monotonic() >= end:
                problems.append(f"not serving within {CLUSTER_START_SECONDS} s: "
                                f"{serve.output()[-1500:]!r}")
                break
            time.sleep(0.2)
        if not problems:
            serving = time.monotonic() - began
            leader = cluster_leader(rest)
            key = f"quickstart-cluster-{n}-{time.monotonic_ns()}"
            first = pay_until(port, key, 30)
            again = pay_until(port + 1, key, 30)
            if first[0] != 201:
                problems.append(f"host 1: {first[0]} {first[2]!r}")
            elif again[0] != 201 or (again[1] or "").lower() != "true" \
                    or again[2] != first[2]:
                problems.append(f"host 2, the same key: {again[0]}, replayed "
                                f"{again[1]}, {again[2]!r} (host 1: {first[2]!r})")
            note(f"fresh start {n}: {leader} won the bootstrap; serving "
                 f"after {serving:.1f} s")
    finally:
        pids = cluster_pids(root)
        rc, left = serve.stop(90)
        if rc is None:
            problems.append("no exit within 90 s of SIGTERM")
        left += [p for p in pids if proc_alive(p)]
        left += [p for p in cluster_pids(root) if p not in left]
        if left:
            problems.append(f"still there after it exited: {left}")
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            wait_gone(left, DEADLINE.timeout(15))
        shutil.rmtree(os.path.join(root, "var", "cluster"), ignore_errors=True)
    RESULTS.record(name, problems)
    return not problems


def check_cluster_starts(build, base, tools, keep):
    """CLUSTER_STARTS fresh starts of serve-cluster, each from an empty
    var/cluster; the first that fails ends the series (its log says
    why)."""
    missing = [t for t in ("patroni", "etcd") if shutil.which(t) is None]
    if not any(os.access(os.path.join(d, "initdb"), os.X_OK) for d in
               (os.path.join("/usr/lib/postgresql", v, "bin") for v in
                (os.listdir("/usr/lib/postgresql")
                 if os.path.isdir("/usr/lib/postgresql") else []))):
        missing.append("PostgreSQL's server")
    if missing:
        RESULTS.record("serve-cluster's fresh starts", [f"no {t}" for t in missing])
        return
    root = scratch_checkout(build, base)
    try:
        for n in range(1, CLUSTER_STARTS + 1):
            if not cluster_start(root, tools, n):
                break
    finally:
        if keep:
            note(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def refused(name, serve, a, a_port, a_workers, want):
    """The second run exits non-zero at once, saying want, never serving;
    A still answers from the same workers.  False when A is hurt (the
    checks after it would prove nothing)."""
    rc = serve.wait_exit(60)
    out = serve.output()
    problems = []
    if rc is None:
        problems.append("still running after 60 s")
        serve.stop()
    elif rc == 0:
        problems.append("exited 0")
    if "idem is serving" in out or want not in out:
        problems.append(f"output: {out.strip()[-800:]!r}")
    status = healthz(a_port)
    if status != 200:
        problems.append(f"the first instance's GET /healthz: {status}")
    workers = pids_in(a.root)["spawn-fcgi.pid"]
    gone = [p for p in workers if not proc_alive(p)]
    if workers != a_workers or gone:
        problems.append(f"the first instance's workers were {a_workers}, now "
                        f"{workers} (gone: {gone})")
    RESULTS.record(name, problems)
    return status == 200 and not gone


def serve_checks(build, base, tools, keep):
    """A serve, the second runs it refuses, its stop and a serve again."""
    one = scratch_checkout(build, base)
    two = scratch_checkout(build, base)
    ports = []

    def port():
        p = free_port()
        while p in ports:
            p = free_port()
        ports.append(p)
        return p

    a_port, a_provider = port(), port()
    a = None
    try:
        a = Serve(one, quickstart_env(tools, PORT=a_port, PROVIDER_PORT=a_provider))
        why = a.wait_serving(a_port, 90)
        RESULTS.record(f"serve on {a_port}, the provider on {a_provider}",
                       [why] if why else [])
        if why:
            return
        out = a.output()
        RESULTS.record("the first build says so and shows a dot a file",
                       [] if "(the first build" in out and "\n.. (2 compiled" in out
                       else [f"output: {out[:600]!r}"])
        # The web root serve makes: the package's pages (www/) and the
        # demo (demo/), which the package does not carry.
        pages = {p: healthz(a_port, p) for p in
                 ("/", "/demo.html", "/demo.js", "/policy.html",
                  "/problems/key-reused.html")}
        RESULTS.record("serve's web root: the demo page beside www/'s pages",
                       [f"GET {p}: {st}" for p, st in pages.items()
                        if st != 200])
        a_workers = pids_in(one)["spawn-fcgi.pid"]
        note(f"first instance: quickstart {a.p.pid}, workers {a_workers}")
        cases = [
            ("the same checkout and ports", one, "serve",
             dict(PORT=a_port, PROVIDER_PORT=a_provider), "var/run is in use"),
            ("the same checkout, other ports", one, "serve",
             dict(PORT=port(), PROVIDER_PORT=port()), "var/run is in use"),
            ("another checkout, the same port", two, "serve",
             dict(PORT=a_port, PROVIDER_PORT=port()), f"127.0.0.1:{a_port} is in use"),
            ("another checkout, the same provider port", two, "serve",
             dict(PORT=port(), PROVIDER_PORT=a_provider),
             f"127.0.0.1:{a_provider} is in use"),
            ("serve-cluster on the same port", one, "serve-cluster",
             dict(PORT=a_port, PROVIDER_PORT=port()), f"127.0.0.1:{a_port} is in use"),
        ]
        for name, root, what, env, want in cases:
            b = Serve(root, quickstart_env(tools, **env), what)
            if not refused(f"a second {what}, {name}: refused", b, a, a_port,
                           a_workers, want):
                note("the first instance is hurt: the remaining cases are skipped")
                return

        before = pids_in(one)
        rc, left = a.stop()
        everything = [p for v in before.values() for p in v]
        RESULTS.record("stopped by its pid: its servers and workers gone",
                       ([] if rc is not None else ["no exit within 30 s of SIGTERM"]) +
                       ([f"still there after it exited: {left}"] if left else []) +
                       ([] if len(everything) >= 4 else
                        [f"pid files: {before}"]))
        a = Serve(one, quickstart_env(tools, PORT=a_port, PROVIDER_PORT=a_provider))
        why = a.wait_serving(a_port, 90)
        RESULTS.record("serve again in the same checkout once the first stopped",
                       [why] if why else [])
        out = a.output()
        RESULTS.record("a later build is not called the first",
                       [] if "make build" in out and "first build" not in out
                       else [f"output: {out[:600]!r}"])
    finally:
        if a is not None:
            a.stop()
        if keep:
            note(f"kept {one} and {two}")
        else:
            shutil.rmtree(one, ignore_errors=True)
            shutil.rmtree(two, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory")
    ap.add_argument("--deadline", type=float, default=600)
    ap.add_argument("--keep", action="store_true", help="keep the scratch checkouts")
    ap.add_argument("--only-cluster", action="store_true",
                    help="serve-cluster's fresh starts alone")
    args = ap.parse_args()
    DEADLINE.reset(args.deadline)
    build = os.path.abspath(args.build)
    check_packages()
    for p in PROGRAMS:
        if not os.access(os.path.join(build, p), os.X_OK):
            RESULTS.record("setup", [f"{build}/{p} missing"])
            return RESULTS.summary("quickstart") or 1
    for tool in ("lighttpd", "spawn-fcgi", "curl", "flock"):
        if shutil.which(tool) is None:
            RESULTS.record("setup", [f"no {tool}"])
            return RESULTS.summary("quickstart") or 1

    base = temp_base()
    tools = tempfile.mkdtemp(prefix="idem-quickstart-tools-", dir=base)
    os.chmod(tools, 0o755)
    stub(os.path.join(tools, "dpkg-query"), "echo 'install ok installed'\n")
    try:
        if not args.only_cluster:
            serve_checks(build, base, tools, args.keep)
        check_cluster_starts(build, base, tools, args.keep)
    finally:
        shutil.rmtree(tools, ignore_errors=True)
    return RESULTS.summary("quickstart")


if __name__ == "__main__":
    sys.exit(main())
