# SPDX-License-Identifier: MIT
"""The run's deadline, results and closing line, and process helpers."""

import os
import signal
import socket
import threading
import time

HOST = "127.0.0.1"

# Headers a replay need not repeat from the original (RFC 9110 6.6.1: Date
# is generated per message; Request-Id names the replay's own request, never
# stored), and the replay marker itself; every other header of the original
# must be equal.
REPLAY_EXEMPT = {"date", "request-id", "idempotent-replayed"}

# What AddressSanitizer, UndefinedBehaviorSanitizer and ThreadSanitizer
# print when they find something, in the workers' and servers' logs.
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "runtime error:", "ERROR: UndefinedBehaviorSanitizer",
                   "WARNING: ThreadSanitizer", "ERROR: ThreadSanitizer")


class Deadline:
    """One deadline for a whole run: every wait is capped by what is left."""

    def __init__(self, seconds):
        self.reset(seconds)

    def reset(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return self.end - time.monotonic()

    def timeout(self, cap=10.0):
        left = self.left()
        if left <= 0:
            raise TimeoutError("global deadline reached")
        return max(0.5, min(cap, left))


# The deadline every module of a run shares; main() resets it from its
# --deadline option.
DEADLINE = Deadline(240)


class Results:
    """Counts "ok - ..." and "FAIL - ...: why" lines, from any thread.
    prefix starts every line's name ("crash "); the parts of a name are
    joined by ": " (server and test)."""

    def __init__(self, prefix=""):
        self.prefix = prefix
        self.passed = 0
        self.failed = 0
        self.lock = threading.Lock()

    def add(self, ok, line):
        """Counts one result whose line the caller wrote."""
        with self.lock:
            if ok:
                self.passed += 1
            else:
                self.failed += 1
            print(line, flush=True)

    def ok(self, *name):
        self.add(True, f"ok - {self.prefix}{': '.join(name)}")

    def fail(self, *name_why):
        *name, why = name_why
        why = str(why).rstrip().replace("\n", "\n#   ")
        self.add(False, f"FAIL - {self.prefix}{': '.join(name)}: {why}")

    def record(self, name, problems):
        """ok when problems is empty, else one failure listing them."""
        if problems:
            self.fail(name, "; ".join(problems[:1]) +
                      ("" if len(problems) == 1 else
                       "\n" + "\n".join(problems[1:])))
        else:
            self.ok(name)

    def summary(self, suite):
        """Prints the closing line; returns the exit status."""
        print(f"{suite}: {self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 else 1


def note(msg):
    print(f"# {msg}", flush=True)


def has_sanitizer_report(text):
    return next((m for m in SANITIZER_MARKS if m in text), None)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


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


def proc_state(pid):
    """A process's state letter and thread count, for a failure message."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return (f"{pid} {stat[stat.rindex(')') + 2]} "
                f"{len(os.listdir(f'/proc/{pid}/task'))} threads")
    except (OSError, ValueError):
        return f"{pid} gone"


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


def proc_exited(pid):
    """True once the process is gone or its main thread has exited (a
    zombie leader): it is leaving of its own accord, though its other
    threads and its memory may take a while longer to go."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2] == "Z"
    except (OSError, ValueError):
        return True


def wait_exited(pids, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if all(proc_exited(p) for p in pids):
            return True
        time.sleep(0.05)
    return all(proc_exited(p) for p in pids)


def wait_gone(pids, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not any(proc_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return not any(proc_alive(p) for p in pids)


def terminate(pids, grace):
    """SIGTERM to pids, SIGKILL to those whose main thread has not exited
    after grace seconds, then a wait for all to be gone (a threaded
    worker's teardown, slow under ThreadSanitizer on a busy machine, is
    not counted in grace).  True if all exited on SIGTERM."""
    kill_pids(pids, signal.SIGTERM)
    clean = wait_exited(pids, grace)
    if not clean:
        kill_pids(pids, signal.SIGKILL)
    wait_gone(pids, DEADLINE.timeout(30))
    return clean


def tail(path, n=15):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
        return "\n".join(f"{os.path.basename(path)}: {ln}" for ln in lines[-n:])
    except OSError:
        return ""



def become_subreaper():
    """Orphaned workers (spawn-fcgi's, fcgid's) are reparented to us, not to a
    PID 1 that may never reap them; best effort, Linux only."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)      # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def reap():
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
