#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Per-request cost of one worker: instructions, system calls, context switches.

Wall-clock figures on a shared two-core machine move by a third between runs;
these do not.  One case at a time, one spawn-fcgi worker behind lighttpd (the
same instance run.py starts), wrk for the load, and one of three meters:

  count      context switches (every thread's voluntary and involuntary, from
             /proc/PID/task/*/status) and CPU time of the worker, per request;
             for idem, also its store's syncs, commits and writes per request
             and writes per commit (its /metrics counters)
  strace     `strace -f -c` on the worker for the whole run: calls per request
             of each system call
  perf       `perf record -g` of the worker during the load (kernel stacks
             included where perf_event_paranoid allows)
  callgrind  the worker under `valgrind --tool=callgrind`, counters zeroed
             after start-up and dumped after the load: instructions per
             request (callgrind_annotate on the file printed)

    python3 tests/bench/cost.py --build build-bench --meter count --case replay

Cases: bare (tests/bench/bare), healthz, replay (POST of one stored key), get,
fresh (a new key per request, provider latency 0).  Per request means over the
requests wrk saw answered.
"""

import argparse
import atexit
import glob
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (the instance and wrk plumbing)

CASES = {
    "bare": ("fixed.lua", ["method=GET", "path=/healthz"]),
    "healthz": ("fixed.lua", ["method=GET", "path=/healthz"]),
    "replay": ("fixed.lua", ["method=POST", "path=/payments", "auth={auth}",
                             "key=bench-replay", "body=" + run.BODY]),
    "get": ("fixed.lua", ["method=GET", "path={loc}", "auth={auth}"]),
    "fresh": ("keys.lua", ["auth={auth}", "mode=fresh", "body=" + run.BODY,
                           "prefix={prefix}"]),
}


class Instance(run.Server):
    """A run.Server whose worker may run under a wrapper (valgrind)."""

    wrapper = []

    def spawn_argv(self):
        argv = super().spawn_argv()
        i = argv.index("--")
        return argv[:i + 1] + ["/bin/sh", "-c", 'exec "$@" 2>>"$LOG"', "sh"] + \
            self.wrapper + [self.exe] if self.wrapper else argv

    def base_env(self, extra=None):
        env = super().base_env(extra)
        env["LOG"] = self.wlog
        return env

    def stop_worker_slowly(self, pid):
        """Stops the worker and waits for valgrind to write its output."""
        os.kill(pid, signal.SIGTERM)
        if not run.wait_gone([pid], 120):
            raise RuntimeError(f"{self.name}: worker {pid} did not stop")

    def workers(self):
        """Processes running exe, directly or as the wrapper's program."""
        out = []
        for d in os.listdir("/proc"):
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except (OSError, ValueError):
                continue
            if d.isdigit() and self.exe.encode() in argv and \
                    argv[0] != b"/bin/sh" and run.proc_alive(int(d)):
                out.append(int(d))
        return sorted(out)


def ctx_switches(pid):
    vol = invol = 0
    for path in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        vol += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        invol += int(line.split()[1])
        except OSError:
            pass
    return vol, invol


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])     # utime, stime


def load(inst, case, seconds, conns, loc):
    script, args = CASES[case]
    mapping = {"auth": run.S.secrets[run.ACCOUNT], "loc": loc,
               "prefix": "c" + secrets.token_hex(4)}
    args = [a.format(**mapping) if "{" in a and not a.startswith("body=") else a
            for a in args]
    path = "/"
    r, _ = run.wrk(inst, conns, seconds, script, args, path)
    if r["bad"] or r["sockerr"]:
        run.say(f"warning: {r['bad']} non-2xx, {r['sockerr']} socket errors")
    return r


STORE_COUNTERS = ("idem_store_syncs_total", "idem_store_commits_total",
                  "idem_store_writes_total", "idem_store_commit_seconds_total",
                  "idem_store_write_wait_seconds_total")


def store_line(before, after, n):
    """The store's counters per request, from two reads of /metrics."""
    if not before or not after or STORE_COUNTERS[0] not in after:
        return ""
    d = [after.get(k, 0) - before.get(k, 0) for k in STORE_COUNTERS]
    per_commit = f"{d[2] / d[1]:.1f}" if d[1] else "-"
    times = (f"; a commit {d[3] * 1e6 / d[1]:.0f} µs, a write's wait "
             f"{d[4] * 1e6 / d[2]:.0f} µs" if d[1] and d[2] else "")
    return (f"; store per request: syncs {d[0] / n:.3f}, commits "
            f"{d[1] / n:.3f}, writes {d[2] / n:.3f} ({per_commit} a commit)"
            + times)


def meter_count(inst, pid, case, a, loc):
    m0 = inst.metrics() if case != "bare" else None
    c0, t0 = ctx_switches(pid), cpu_ticks(pid)
    r = load(inst, case, a.seconds, a.conns, loc)
    c1, t1 = ctx_switches(pid), cpu_ticks(pid)
    m1 = inst.settle() if m0 else None
    n = r["requests"]
    hz = os.sysconf("SC_CLK_TCK")
    print(f"{case}: {n} requests, {r['rps']:,.0f}/s, p99 "
          f"{r['latency_us']['p99'] / 1000:.2f} ms; per request: "
          f"voluntary cs {(c1[0] - c0[0]) / n:.2f}, involuntary cs "
          f"{(c1[1] - c0[1]) / n:.2f}, user µs {(t1[0] - t0[0]) * 1e6 / hz / n:.1f}, "
          f"sys µs {(t1[1] - t0[1]) * 1e6 / hz / n:.1f}" + store_line(m0, m1, n))


def load_under(argv, inst, case, a, loc, stop=signal.SIGTERM):
    """The load, with argv (a tracer of the worker) running around it:
    started a second before, stopped with stop half a second after."""
    tr = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    time.sleep(1)
    r = load(inst, case, a.seconds, a.conns, loc)
    time.sleep(0.5)
    tr.send_signal(stop)
    tr.wait()
    return r


def meter_strace(inst, pid, case, a, loc):
    out = os.path.join(a.out_dir, f"strace-{case}.txt")
    r = load_under(["strace", "-f", "-c", "-o", out, "-p", str(pid)],
                   inst, case, a, loc)
    n = r["requests"]
    print(f"{case}: {n} requests under strace, {r['rps']:,.0f}/s; calls per request:")
    with open(out) as f:
        for line in f:
            p = line.split()
            if len(p) >= 5 and p[3].isdigit():
                name = p[-1]
                errs = int(p[4]) if len(p) == 6 else 0
                print(f"  {name:16} {int(p[3]) / n:7.3f}" +
                      (f"  ({errs / n:.3f} failed)" if errs else ""))


def meter_perf(inst, pid, case, a, loc):
    """perf record -g of the worker (user and kernel) during the load."""
    out = os.path.join(a.out_dir, f"perf-{case}.data")
    r = load_under(["perf", "record", "-g", "-q", "-o", out, "-p", str(pid)],
                   inst, case, a, loc, signal.SIGINT)
    print(f"{case}: {r['requests']} requests under perf, {r['rps']:,.0f}/s; "
          f"perf report -i {out} --no-children")


def meter_sync(inst, pid, case, a, loc):
    """strace -T of the worker's writes and syncs only (seccomp filtered)."""
    out = os.path.join(a.out_dir, f"sync-{case}.txt")
    r = load_under(["strace", "-f", "--seccomp-bpf", "-T", "-tt", "-o", out,
                    "-e", "trace=pwrite64,pwritev,fdatasync,fsync,write",
                    "-p", str(pid)], inst, case, a, loc)
    print(f"{case}: {r['requests']} requests under strace, {r['rps']:,.0f}/s; {out}")


def meter_trace(inst, pid, case, a, loc):
    """perf trace -s of the worker: system calls' counts and times."""
    out = os.path.join(a.out_dir, f"trace-{case}.txt")
    r = load_under(["perf", "trace", "-s", "-o", out, "-p", str(pid)],
                   inst, case, a, loc, signal.SIGINT)
    print(f"{case}: {r['requests']} requests under perf trace, "
          f"{r['rps']:,.0f}/s; {out}")


def start(case):
    prog = (os.path.join(run.S.build, "tests/bench/bare") if case == "bare"
            else os.path.join(run.S.build, "idem-fcgi"))
    inst = Instance(f"{case}-{secrets.token_hex(2)}", prog,
                    {"IDEM_PROVIDER_LATENCY_MS": "0"})
    inst.start()
    loc = run.first_payment(inst)[0] if case != "bare" else None
    return inst, loc


def stop(inst):
    inst.stop()
    run.INSTANCES.remove(inst)


def callgrind_total(path):
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"{path}: no totals")


def meter_callgrind(inst, pid, case, a, loc):
    """The worker's instructions are dumped when it exits; a second run
    with no load but the same start-up and first payment is subtracted."""
    r = load(inst, case, a.seconds, a.conns, loc)
    return r


def callgrind_run(case, a, loaded):
    inst, loc = start(case)
    pid = inst.workers()[0]
    n = load(inst, case, a.seconds, a.conns, loc)["requests"] if loaded else 0
    inst.stop_worker_slowly(pid)
    out = os.path.join(inst.root, f"callgrind.out.{pid}")
    total = callgrind_total(out)
    dst = os.path.join(a.out_dir, f"callgrind-{case}{'' if loaded else '-idle'}.out")
    shutil.copyfile(out, dst)
    stop(inst)
    return total, n, dst


def callgrind_case(case, a):
    base, _, _ = callgrind_run(case, a, False)
    total, n, dst = callgrind_run(case, a, True)
    print(f"{case}: {n} requests under callgrind; {(total - base) / n:,.0f} "
          f"instructions per request ({dst}, less {base:,} for start-up "
          "and shutdown)")


METERS = {"count": meter_count, "strace": meter_strace,
          "callgrind": meter_callgrind, "perf": meter_perf,
          "trace": meter_trace, "sync": meter_sync}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--meter", choices=sorted(METERS), default="count")
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--conns", type=int, default=32)
    ap.add_argument("--threads", default="256", help="IDEM_THREADS")
    ap.add_argument("--cpus", help="pin the worker's threads (taskset list)")
    ap.add_argument("--out-dir", default="/tmp")
    ap.add_argument("--env", action="append", default=[],
                    metavar="IDEM_NAME=VALUE",
                    help="an IDEM_* setting for the worker (repeatable)")
    a = ap.parse_args()
    cases = a.case or ["bare", "healthz", "replay"]
    os.environ["BENCH_WORKERS"] = "1"
    run.S = run.Settings()
    run.S.notes = []
    atexit.register(run.cleanup)
    run.S.fill_dir = "/dev/shm"
    run.S.big_keys = run.S.purge_keys = 1
    run.setup_paths(argparse.Namespace(build=a.build))
    run.S.secrets = {run.ACCOUNT: "sk_bench_" + secrets.token_hex(16),
                     run.METRICS_ACCOUNT: "sk_metrics_" + secrets.token_hex(16)}
    run.S.bench_env = {"IDEM_MAP_SIZE": "4G", "IDEM_KEYS_PER_ACCOUNT": "0",
                       "IDEM_THREADS": a.threads}
    run.S.user_env = {}
    for kv in a.env:
        name, eq, value = kv.partition("=")
        if not eq or not name.startswith("IDEM_"):
            sys.exit(f"cost: --env wants IDEM_NAME=VALUE, not {kv!r}")
        run.S.bench_env[name] = value
    if a.meter == "callgrind":
        Instance.wrapper = ["valgrind", "--tool=callgrind", "--vgdb=no",
                            "--callgrind-out-file=callgrind.out.%p"]
    for case in cases:
        if a.meter == "callgrind":
            callgrind_case(case, a)
            continue
        inst, loc = start(case)
        pids = inst.workers()
        if len(pids) != 1:
            sys.exit(f"cost: {len(pids)} workers for {case}")
        if a.cpus:
            subprocess.run(["taskset", "-a", "-cp", a.cpus, str(pids[0])],
                           check=True, stdout=subprocess.DEVNULL)
        # Warm up: threads started, pages touched.
        load(inst, case, 1, a.conns, loc)
        METERS[a.meter](inst, pids[0], case, a, loc)
        stop(inst)

if __name__ == "__main__":
    main()
