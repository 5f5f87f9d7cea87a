#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Black-box CGI fixtures for the idem responder.

Runs the real responder binary (BUILD_DIR/idem-fcgi) as a plain CGI child,
one process per request, with a full CGI environment (RFC 3875 section 4.1)
and the body piped to standard input, then checks the CGI response (RFC 3875
section 6) and the store (BUILD_DIR/idemctl stats) against scenario files.

    python3 tests/cgi/run.py --build BUILD_DIR [-v] [-j N] [--keep]
                             [--timeout S] [--scenarios DIR] [--suite NAME]
                             [--wrap CMD] [scenario ...]

A scenario is tests/cgi/scenarios/NAME.t (or DIR/NAME.t); the format is
described in tests/cgi/README.md.  Each scenario runs in a fresh temporary
directory (store, provider ledger, keys file with two accounts) that is
removed afterwards.  One line per scenario, "ok - NAME" or "FAIL - NAME:
why", then "SUITE: N passed, M failed" (SUITE is "cgi" unless --suite says
otherwise); the exit status is 0 iff nothing failed.  --wrap runs every
responder under a checker such as valgrind, whose own error report fails
the scenario.

Python 3 standard library only.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib.common import REPLAY_EXEMPT, SANITIZER_MARKS, Results  # noqa: E402
from lib import answers, pg  # noqa: E402

# A scenario about the LMDB store's own files says so in a comment, and
# is skipped with --store pg.
LMDB_ONLY = "# store: LMDB only"


HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIO_DIR = os.path.join(HERE, "scenarios")
REPO = os.path.dirname(os.path.dirname(HERE))

# The two accounts of every scenario's keys file: short name -> (principal,
# API secret).  "as alice" in a request sends "Authorization: Bearer <secret>".
ACCOUNTS = {
    "alice": ("acct_alice", "sk_test_alice_4f1b2b0b822cd15d"),
    "bob": ("acct_bob", "sk_test_bob_9a2feaa0c55ad015a"),
}

# Shapes a capture may be declared with, as in {id:pay}.
SHAPES = {
    "pay": r"pay_[0-9a-f]{24}",
    "ch": r"ch_[0-9a-f]{24}",
    "time": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z",
    "hex16": r"[0-9a-f]{16}",
    "req": r"req_[0-9a-f]{24}",
    "hex": r"[0-9a-f]+",
    "int": r"[0-9]+",
    "text": r"[^\"]+",
}

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::([^{}]*))?\}")

# Valgrind's closing count when it found something (memcheck errors, and
# leaks of the kinds given to --errors-for-leak-kinds).
VALGRIND_ERRORS = re.compile(r"^==\d+== ERROR SUMMARY: [1-9]", re.M)


class ScenarioError(Exception):
    """A mistake in the scenario file itself (not in the responder)."""


class Fail(Exception):
    """An expectation did not hold.  detail: extra lines for diagnosis."""

    def __init__(self, msg, detail=None):
        super().__init__(msg)
        self.detail = detail or []


# ---------------------------------------------------------------- parsing

class Step:
    def __init__(self, kind, line, arg="", name=None):
        self.kind = kind      # request spawn expect check env unset file
        self.line = line      # gate reached release await
        self.arg = arg
        self.name = name
        self.body = []        # (lineno, text) of the indented block


def parse_scenario(path):
    """Reads a .t file into a list of Steps (directive + indented block)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    steps = []
    i = 0
    head = re.compile(r"^(request|spawn)(?:\s+([A-Za-z0-9_.-]+))?\s*:\s*(.*)$")
    while i < len(lines):
        raw = lines[i]
        lineno = i + 1
        i += 1
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if raw[0] in " \t":
            if not steps:
                raise ScenarioError("line %d: indented line with no directive"
                                    % lineno)
            text = raw.strip()
            m = re.match(r"^(body|json|log)\s*<<\s*(\w+)$", text)
            if m:
                indent = len(raw) - len(raw.lstrip())
                end = m.group(2)
                chunk = []
                while True:
                    if i >= len(lines):
                        raise ScenarioError("line %d: heredoc %s never ends"
                                            % (lineno, end))
                    nxt = lines[i]
                    i += 1
                    if nxt.strip() == end:
                        break
                    chunk.append(nxt[indent:] if nxt[:indent].strip() == ""
                                 else nxt.lstrip())
                steps[-1].body.append((lineno, m.group(1) + ": " +
                                       "\n".join(chunk)))
            else:
                steps[-1].body.append((lineno, text))
            continue
        text = raw.strip()
        m = head.match(text)
        if m:
            steps.append(Step(m.group(1), lineno, m.group(3).strip(),
                              m.group(2)))
            continue
        m = re.match(r"^(expect|check|store-lacks|db-lacks|ctl|run)\s*:\s*"
                     r"(.*)$", text)
        if m:
            steps.append(Step(m.group(1), lineno, m.group(2).strip()))
            continue
        m = re.match(r"^(env|unset|file|fifo|gate|reached|release|await|"
                     r"secret|snapshot|unchanged)\s+(.*)$", text)
        if m:
            steps.append(Step(m.group(1), lineno, m.group(2).strip()))
            continue
        raise ScenarioError("line %d: unknown directive: %s" % (lineno, text))
    return steps


# ---------------------------------------------------------------- CGI output

class Response:
    def __init__(self, name, method, returncode, stdout, stderr):
        self.name = name
        self.method = method
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.status = None
        self.headers = []     # [(name, value)] in order
        self.body = b""
        self.parse_error = None
        self._parse()

    def _parse(self):
        """RFC 3875 section 6: header lines, a blank line, the body."""
        out = self.stdout
        m = re.search(rb"\r?\n\r?\n", out)
        if out.startswith(b"\r\n") or out.startswith(b"\n"):
            head, self.body = b"", out[2 if out.startswith(b"\r\n") else 1:]
        elif m:
            head, self.body = out[:m.start()], out[m.end():]
        else:
            self.parse_error = ("no blank line ends the CGI header section "
                                "(%d bytes of output)" % len(out))
            return
        if not head:
            self.parse_error = "the CGI header section is empty"
            return
        for line in re.split(rb"\r?\n", head):
            mm = re.match(rb"^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)"
                          rb"[ \t]*$", line)
            if not mm:
                self.parse_error = "malformed CGI header line %r" % line
                return
            self.headers.append((mm.group(1).decode("latin-1"),
                                 mm.group(2).decode("latin-1")))
        st = self.all("Status")
        if len(st) > 1:
            self.parse_error = "more than one Status header"
        elif st:
            mm = re.match(r"^(\d{3})(?: (.*))?$", st[0])
            if not mm:
                self.parse_error = "malformed Status header %r" % st[0]
            else:
                self.status = int(mm.group(1))
        elif self.all("Location"):
            self.status = 302
        else:
            self.status = 200

    def all(self, name):
        return [v for n, v in self.headers if n.lower() == name.lower()]

    def get(self, name):
        vals = self.all(name)
        if len(vals) > 1:
            raise Fail("header %s appears %d times: %r" % (name, len(vals),
                                                            vals))
        return vals[0] if vals else None

    def killed(self):
        return self.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL)

    def describe(self, limit=600):
        text = self.stdout.decode("utf-8", "backslashreplace")
        if len(text) > limit:
            text = text[:limit] + "...(%d bytes)" % len(self.stdout)
        lines = ["response of %s (exit %s):" % (self.name, self.returncode)]
        lines += ["  | " + l for l in text.split("\n")]
        err = self.stderr.decode("utf-8", "backslashreplace").strip()
        if err:
            tail = err.split("\n")[-8:]
            lines += ["stderr of %s:" % self.name] + ["  ! " + l for l in tail]
        return lines


# ---------------------------------------------------------------- JSON

class Num(str):
    """A JSON number, kept as its text so 100.00 and 100.0 differ."""


def _pairs(pairs):
    seen = set()
    for k, _ in pairs:
        if k in seen:
            raise ValueError("duplicate member name %r" % k)
        seen.add(k)
    return dict(pairs)


def load_json(text):
    return json.loads(text, object_pairs_hook=_pairs, parse_float=Num,
                      parse_int=Num, parse_constant=Num)


# ---------------------------------------------------------------- a scenario

class Scenario:
    def __init__(self, path, build, timeout, verbose, keep, wrap=None,
                 wrap_status=99):
        self.path = path
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.build = build
        self.timeout = timeout
        self.verbose = verbose
        self.keep = keep
        # A command (argv list) every responder runs under, and the exit
        # status by which it reports an error of its own.
        self.wrap = wrap or []
        self.wrap_status = wrap_status
        self.vars = {}           # captured values: name -> str
        self.requests = {}       # name -> request dict (for "like")
        self.responses = {}      # name -> Response
        self.sent = {}           # name -> the CGI environment it ran in
        self.spawned = {}        # name -> (Popen, thread, result holder)
        self.gates = {}          # name -> fifo path
        self.gate_fds = {}       # name -> write fd
        self.snapshots = {}      # name -> listing of the directory
        self.env = {}            # scenario-wide environment (None = unset)
        self.current = None      # the Response "expect" checks
        self.log = []
        self.nreq = 0
        # Failed expectation lines and checks: the scenario goes on after
        # them (the status was right) so that one bug does not hide others.
        self.failures = []
        self.pg = None           # lib.pg.Postgres with --store pg
        self.pgdb = None         # the scenario's database there

    # -- set-up -------------------------------------------------------

    def setup(self):
        self.tmp = tempfile.mkdtemp(prefix="idem-cgi-%s-" % self.name)
        os.mkdir(os.path.join(self.tmp, "db"))
        os.mkdir(os.path.join(self.tmp, "provider"))
        keys = os.path.join(self.tmp, "keys")
        with open(keys, "w") as f:
            f.write("# account  sha256(secret) in hex\n")
            for principal, secret in ACCOUNTS.values():
                f.write("%s %s\n" % (principal,
                                     hashlib.sha256(secret.encode())
                                     .hexdigest()))
        # Every scenario runs on a sealed store, as quickstart serves;
        # "unset IDEM_SECRET_FILE" runs one in the clear.
        secret = os.path.join(self.tmp, "secret")
        p = subprocess.run([os.path.join(self.build, "idemctl"),
                            "new-secret", secret], capture_output=True,
                           timeout=self.timeout)
        if p.returncode != 0:
            raise Fail("idemctl new-secret: %s" %
                       p.stderr.decode("utf-8", "replace").strip())
        self.env = {
            "IDEM_DB_DIR": os.path.join(self.tmp, "db"),
            "IDEM_PROVIDER_DIR": os.path.join(self.tmp, "provider"),
            "IDEM_KEYS_FILE": keys,
            "IDEM_SECRET_FILE": secret,
            # The in-process simulated provider, chosen as every program
            # that may charge must be told: none is ever a default.
            "IDEM_PROVIDER": "simulated",
        }
        if self.pg is not None:
            # A fresh database per scenario, migrated as an operator would.
            self.pgdb = "idem_" + os.path.basename(self.tmp).replace("-", "_")
            uri = self.pg.createdb(self.pgdb)
            p = subprocess.run([os.path.join(self.build, "idemctl"), "-s",
                                uri, "migrate"], capture_output=True,
                               timeout=self.timeout)
            if p.returncode != 0:
                raise Fail("idemctl migrate: %s" %
                           p.stderr.decode("utf-8", "replace").strip())
            self.env["IDEM_STORE"] = uri

    def teardown(self, failed):
        for name, (proc, thread, _) in self.spawned.items():
            if proc.poll() is None:
                proc.kill()
            thread.join(5)
        for name in list(self.gate_fds):
            self._close_gate(name)
        if self.pgdb is not None and not (self.keep and failed):
            self.pg.dropdb(self.pgdb)
        if self.keep and failed:
            self.log.append("kept %s" % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- substitution in requests --------------------------------------

    def subst(self, text, where):
        def one(m):
            name, arg = m.group(1), m.group(2)
            if name == "secret" and arg in ACCOUNTS:
                return ACCOUNTS[arg][1]
            if name == "principal" and arg in ACCOUNTS:
                return ACCOUNTS[arg][0]
            if name == "tmp" and arg is None:
                return self.tmp
            if name == "gate" and arg is not None:
                if arg not in self.gates:
                    raise ScenarioError("%s: no gate %r" % (where, arg))
                return self.gates[arg]
            if name == "repeat" and arg is not None:
                n, _, s = arg.partition(":")
                return s * int(n)
            if name == "byte" and arg is not None:
                b = int(arg, 16)
                # Bytes over 0x7f go through os.fsencode's surrogateescape.
                return chr(b) if b < 0x80 else chr(0xDC00 + b)
            if arg is None and name in self.vars:
                return self.vars[name]
            raise ScenarioError("%s: unknown substitution %s" %
                                (where, m.group(0)))
        return PLACEHOLDER.sub(one, text)

    # -- matching with captures ----------------------------------------

    def match(self, template, actual, what):
        """Matches actual against a template with {name} placeholders.

        An unbound {name} captures (at most up to a double quote unless a
        shape says otherwise), a bound one must equal its value, {any}
        matches anything.  Binds new names only when the whole match holds.
        """
        regex = []
        pos = 0
        fresh = {}
        for m in PLACEHOLDER.finditer(template):
            regex.append(re.escape(template[pos:m.start()]))
            pos = m.end()
            name, shape = m.group(1), m.group(2)
            if name == "any":
                regex.append("(?s:.*?)")
            elif name in self.vars:
                regex.append(re.escape(self.vars[name]))
            elif name in fresh:
                regex.append("(?P=%s)" % fresh[name])
            else:
                if shape is not None and shape not in SHAPES:
                    raise ScenarioError("unknown shape %r in %s" %
                                        (shape, m.group(0)))
                group = "g%d_%s" % (len(fresh), name)
                fresh[name] = group
                regex.append("(?P<%s>%s)" % (group, SHAPES[shape] if shape
                                             else r'[^"]*?'))
        regex.append(re.escape(template[pos:]))
        mm = re.fullmatch("".join(regex), actual, re.S)
        if not mm:
            bound = {n: self.vars[n] for n in
                     (p.group(1) for p in PLACEHOLDER.finditer(template))
                     if n in self.vars}
            raise Fail("%s: expected %r%s, got %r" %
                       (what, template,
                        " with %s" % bound if bound else "", actual))
        for name, group in fresh.items():
            self.vars[name] = mm.group(group)

    def match_json(self, exp, act, where):
        if isinstance(exp, str) and not isinstance(exp, Num) \
                and exp == "{any}":
            return
        if isinstance(exp, dict):
            if not isinstance(act, dict):
                raise Fail("%s: expected an object, got %s" %
                           (where, json.dumps(act)))
            missing = [k for k in exp if k not in act]
            extra = [k for k in act if k not in exp]
            if missing or extra:
                raise Fail("%s: members differ: missing %s, unexpected %s" %
                           (where, missing, extra))
            for k in exp:
                self.match_json(exp[k], act[k], "%s.%s" % (where, k))
        elif isinstance(exp, list):
            if not isinstance(act, list) or len(act) != len(exp):
                raise Fail("%s: expected an array of %d, got %s" %
                           (where, len(exp), json.dumps(act)))
            for n, (e, a) in enumerate(zip(exp, act)):
                self.match_json(e, a, "%s[%d]" % (where, n))
        elif isinstance(exp, Num):
            if not isinstance(act, Num) or str(exp) != str(act):
                raise Fail("%s: expected the number %s, got %s" %
                           (where, exp, json.dumps(act)))
        elif isinstance(exp, str):
            if not isinstance(act, str) or isinstance(act, Num):
                raise Fail("%s: expected a string %r, got %s" %
                           (where, exp, json.dumps(act)))
            self.match(exp, act, where)
        elif exp != act or type(exp) is not type(act):
            raise Fail("%s: expected %s, got %s" %
                       (where, json.dumps(exp), json.dumps(act)))

    # -- running the responder -----------------------------------------

    def build_request(self, step):
        where = "line %d" % step.line
        arg = step.arg
        req = {"method": None, "target": None, "headers": [], "env": {},
               "body": None, "pad": None}
        m = re.match(r"^like\s+(\S+)$", arg)
        if m:
            req = self._copy(m.group(1), where)
        else:
            mm = re.match(r"^([A-Z]+)\s+(\S+)$", arg)
            if not mm:
                raise ScenarioError("%s: expected METHOD TARGET or like NAME"
                                    % where)
            req["method"], req["target"] = mm.group(1), mm.group(2)
        for lineno, text in step.body:
            where = "line %d" % lineno
            m = re.match(r"^like\s+(\S+)$", text)
            if m:
                base = self._copy(m.group(1), where)
                base["method"], base["target"] = req["method"], req["target"]
                req = base
                continue
            m = re.match(r"^as\s+(\S+)$", text)
            if m:
                if m.group(1) not in ACCOUNTS:
                    raise ScenarioError("%s: no account %r" %
                                        (where, m.group(1)))
                self._set_header(req, "Authorization",
                                 "Bearer {secret:%s}" % m.group(1))
                continue
            m = re.match(r"^env\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$", text)
            if m:
                req["env"][m.group(1)] = m.group(2)
                continue
            m = re.match(r"^unset\s+([A-Za-z_][A-Za-z0-9_]*)$", text)
            if m:
                req["env"][m.group(1)] = None
                continue
            m = re.match(r"^drop\s+(\S+)$", text)
            if m:
                req["headers"] = [(n, v) for n, v in req["headers"]
                                  if n.lower() != m.group(1).lower()]
                continue
            m = re.match(r"^body:(?: (.*))?$", text, re.S)
            if m:
                req["body"] = m.group(1) or ""
                continue
            m = re.match(r"^pad-body-to:\s*(\d+)$", text)
            if m:
                req["pad"] = int(m.group(1))
                continue
            m = re.match(r"^([!#$%&'*+.^_`|~0-9A-Za-z-]+):(?: (.*))?$", text)
            if m:
                self._set_header(req, m.group(1), m.group(2) or "")
                continue
            raise ScenarioError("%s: not a request line: %s" % (where, text))
        return req

    def _copy(self, name, where):
        if name not in self.requests:
            raise ScenarioError("%s: no earlier request named %r" %
                                (where, name))
        old = self.requests[name]
        return {"method": old["method"], "target": old["target"],
                "headers": list(old["headers"]), "env": dict(old["env"]),
                "body": old["body"], "pad": old["pad"]}

    @staticmethod
    def _set_header(req, name, value):
        req["headers"] = [(n, v) for n, v in req["headers"]
                          if n.lower() != name.lower()] + [(name, value)]

    def cgi_env(self, req, where):
        target = self.subst(req["target"], where)
        path, _, query = target.partition("?")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        for passthru in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
                         "TMPDIR", "LD_LIBRARY_PATH"):
            if passthru in os.environ:
                env[passthru] = os.environ[passthru]
        env.update({
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "SERVER_SOFTWARE": "idem-cgi-fixture/1",
            "SERVER_NAME": "localhost",
            "SERVER_PORT": "8080",
            "REMOTE_ADDR": "127.0.0.1",
            "REMOTE_PORT": "40000",
            "REQUEST_METHOD": req["method"],
            "REQUEST_URI": target,
            "SCRIPT_NAME": "",
            "PATH_INFO": cgi_path_info(path),
            "QUERY_STRING": query,
            "HTTP_HOST": "localhost:8080",
        })
        body = None
        if req["body"] is not None:
            text = self.subst(req["body"], where)
            body = text.encode("utf-8", "surrogateescape")
            if req["pad"] is not None:
                if len(body) > req["pad"]:
                    raise ScenarioError("%s: body is already %d bytes, over "
                                        "pad-body-to %d" %
                                        (where, len(body), req["pad"]))
                body += b" " * (req["pad"] - len(body))
            env["CONTENT_LENGTH"] = str(len(body))
        for name, value in req["headers"]:
            var = name.upper().replace("-", "_")
            if var not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
                var = "HTTP_" + var
            env[var] = self.subst(value, where)
        for name, value in list(self.env.items()) + list(req["env"].items()):
            if value is None:
                env.pop(name, None)
            else:
                env[name] = self.subst(value, where)
        return env, body or b""

    def _popen(self, env, name):
        exe = os.path.join(self.build, "idem-fcgi")
        # Standard input is a pipe, never a socket: the responder answers
        # one request as plain CGI.
        return subprocess.Popen(self.wrap + [exe], env=env, cwd=self.tmp,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)

    def run_request(self, step):
        self.nreq += 1
        name = step.name or "request#%d" % self.nreq
        req = self.build_request(step)
        self.requests[name] = req
        env, body = self.cgi_env(req, "line %d" % step.line)
        self.sent[name] = env
        proc = self._popen(env, name)
        holder = {}

        def talk():
            try:
                holder["out"] = proc.communicate(body, timeout=self.timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                holder["out"] = proc.communicate()
                holder["timeout"] = True
            except Exception as e:  # a broken pipe when it never reads
                holder["error"] = e
                proc.kill()
                holder["out"] = (b"", b"")
                try:
                    out = proc.communicate()
                    holder["out"] = out
                except Exception:
                    pass

        thread = threading.Thread(target=talk, daemon=True)
        thread.start()
        if step.kind == "spawn":
            self.spawned[name] = (proc, thread, holder)
            self.log.append("spawned %s: %s %s" % (name, req["method"],
                                                    req["target"]))
            return
        self.current = self._finish(name, proc, thread, holder, step.line)

    def _finish(self, name, proc, thread, holder, line):
        thread.join(self.timeout + 10)
        if thread.is_alive() or holder.get("timeout"):
            proc.kill()
            raise Fail("line %d: %s did not finish within %ss" %
                       (line, name, self.timeout))
        out, err = holder["out"]
        resp = Response(name, self.requests[name]["method"], proc.returncode,
                        out, err)
        self.responses[name] = resp
        self._record(name, resp)
        self.log.append("%s -> %s %s" % (name, resp.status if
                                          resp.parse_error is None else "?",
                                          resp.body[:200]))
        text = err.decode("utf-8", "replace")
        for mark in SANITIZER_MARKS:
            if mark in text:
                raise Fail("line %d: %s: sanitizer report on stderr" %
                           (line, name), resp.describe(2000))
        if self.wrap and (proc.returncode == self.wrap_status or
                          VALGRIND_ERRORS.search(text)):
            report = [l for l in text.split("\n")
                      if re.match(r"==\d+==", l)]
            raise Fail("line %d: %s: %s reported an error (exit status %s)"
                       % (line, name, os.path.basename(self.wrap[0]),
                          proc.returncode),
                       ["report of %s:" % self.wrap[0]] +
                       ["  ! " + l for l in (report or
                                             text.split("\n"))[:120]])
        return resp

    def _record(self, name, resp):
        """The answer, for the conformance check (tests/lib/answers.py):
        only a whole one, from a responder that was not killed."""
        if not answers.enabled() or resp.parse_error or resp.killed():
            return
        env = self.sent[name]
        headers = [(n[5:].replace("_", "-"), v) for n, v in env.items()
                   if n.startswith("HTTP_")]
        headers += [(n.replace("_", "-"), env[n]) for n in
                    ("CONTENT_TYPE", "CONTENT_LENGTH") if n in env]
        path = answers.routed_path(env.get("REQUEST_URI", ""),
                                   env.get("IDEM_MOUNT"))
        answers.record("cgi:%s:%s" % (self.name, name),
                       env.get("REQUEST_METHOD"), env.get("REQUEST_URI"),
                       resp.status, [h for h in resp.headers
                                     if h[0].lower() != "status"],
                       resp.body, headers, path)

    # -- gates (fifos at fault points) ---------------------------------

    def gate(self, step):
        name = step.arg
        path = os.path.join(self.tmp, name + ".fifo")
        os.mkfifo(path)
        self.gates[name] = path

    def reached(self, step):
        """Waits until a spawned responder opens the gate's fifo to read."""
        name = step.arg
        if name not in self.gates:
            raise ScenarioError("line %d: no gate %r" % (step.line, name))
        path = self.gates[name]
        holder = {}

        def opener():
            try:
                holder["fd"] = os.open(path, os.O_WRONLY)
            except OSError as e:
                holder["error"] = e

        t = threading.Thread(target=opener, daemon=True)
        t.start()
        deadline = time.monotonic() + self.timeout
        # join() returns as soon as the open completes; the short timeout
        # only lets us notice a responder that exited without reaching it.
        while t.is_alive() and time.monotonic() < deadline:
            t.join(0.05)
            if t.is_alive() and all(p.poll() is not None for p, _, _ in
                                    self.spawned.values()):
                break
        if t.is_alive():
            # Unblock our own open by opening the read end, then give up.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            t.join(5)
            os.close(fd)
            if "fd" in holder:
                os.close(holder["fd"])
            gone = ["%s (exit %s)" % (n, p.returncode) for n, (p, _, _) in
                    self.spawned.items() if p.poll() is not None]
            raise Fail("line %d: no responder reached gate %s%s" %
                       (step.line, name, ": exited first: " + ", ".join(gone)
                        if gone else " within %ss" % self.timeout))
        if "error" in holder:
            raise Fail("line %d: opening gate %s: %s" %
                       (step.line, name, holder["error"]))
        self.gate_fds[name] = holder["fd"]
        self.log.append("reached %s" % name)

    def _close_gate(self, name):
        fd = self.gate_fds.pop(name, None)
        if fd is not None:
            os.close(fd)

    def release(self, step):
        if step.arg not in self.gate_fds:
            raise ScenarioError("line %d: gate %r was not reached" %
                                (step.line, step.arg))
        self._close_gate(step.arg)
        self.log.append("released %s" % step.arg)

    def await_(self, step):
        name = step.arg
        if name not in self.spawned:
            raise ScenarioError("line %d: nothing spawned as %r" %
                                (step.line, name))
        proc, thread, holder = self.spawned.pop(name)
        self.current = self._finish(name, proc, thread, holder, step.line)

    # -- expectations --------------------------------------------------

    def expect(self, step):
        resp = self.current
        if resp is None:
            raise ScenarioError("line %d: expect with no response" %
                                step.line)
        where = "line %d (%s)" % (step.line, resp.name)
        try:
            self._expect(step, resp, where)
        except Fail as f:
            f.detail = f.detail or resp.describe()
            raise

    def _expect(self, step, resp, where):
        want = step.arg
        if want == "killed":
            if not resp.killed():
                raise Fail("%s: expected the process to be killed by the "
                           "fault point, got exit status %s" %
                           (where, resp.returncode))
            return
        if resp.returncode is not None and resp.returncode < 0:
            raise Fail("%s: responder died of signal %d" %
                       (where, -resp.returncode))
        if resp.parse_error:
            raise Fail("%s: bad CGI output: %s" % (where, resp.parse_error))
        if not re.fullmatch(r"\d{3}(\|\d{3})*", want):
            raise ScenarioError("line %d: expect: STATUS[|STATUS...] or "
                                "killed" % step.line)
        if resp.status not in [int(w) for w in want.split("|")]:
            raise Fail("%s: status: expected %s, got %s" %
                       (where, want, resp.status))
        # Generic CGI checks (RFC 3875 section 6.3.1, RFC 9110 8.6).
        if resp.body and resp.get("Content-Type") is None:
            raise Fail("%s: a body without Content-Type" % where)
        cl = resp.get("Content-Length")
        # RFC 9110 8.6: HEAD and 304 may give the length a GET would have.
        if cl is not None and cl != str(len(resp.body)) and \
                resp.method != "HEAD" and resp.status != 304:
            raise Fail("%s: Content-Length %s but %d body bytes" %
                       (where, cl, len(resp.body)))
        for lineno, text in step.body:
            try:
                self._assert(text, resp, "line %d (%s)" % (lineno, resp.name))
            except Fail as f:
                f.detail = f.detail or resp.describe()
                self.failures.append(f)

    def _assert(self, text, resp, where):
        m = re.match(r"^no\s+(\S+)$", text)
        if m:
            vals = resp.all(m.group(1))
            if vals:
                raise Fail("%s: header %s must be absent, got %r" %
                           (where, m.group(1), vals))
            return
        m = re.match(r"^body:(?: (.*))?$", text, re.S)
        if m:
            body = resp.body.decode("utf-8", "surrogateescape")
            self.match(m.group(1) or "", body, where + ": body")
            return
        m = re.match(r"^stderr-has:\s*(.*)$", text)
        if m:
            needle = self.subst(m.group(1), where)
            if needle not in resp.stderr.decode("utf-8", "surrogateescape"):
                raise Fail("%s: %r is not on the responder's stderr" %
                           (where, needle))
            return
        m = re.match(r"^log-line:\s*(.*)$", text)
        if m:
            self._log_line(m.group(1), resp, where)
            return
        m = re.match(r"^stderr-lacks:\s*(.*)$", text)
        if m:
            needle = self.subst(m.group(1), where)
            if needle in resp.stderr.decode("utf-8", "surrogateescape"):
                raise Fail("%s: %r appears on the responder's stderr" %
                           (where, needle))
            return
        if text == "utf8-body":
            self._utf8_body(resp, where)
            return
        m = re.match(r"^body-of:\s*(\S+)$", text)
        if m:
            other = self._response(m.group(1), where)
            if resp.body != other.body:
                raise Fail("%s: body differs from %s's: expected %r, got %r"
                           % (where, other.name, other.body, resp.body))
            return
        # json: the body; log: the JSON request log line on stderr.
        m = re.match(r"^(json|log):\s*(.*)$", text, re.S)
        if m:
            try:
                exp = load_json(m.group(2))
            except ValueError as e:
                raise ScenarioError("%s: expected JSON does not parse: %s" %
                                    (where, e))
            if m.group(1) == "json":
                self.match_json(exp, self._json(resp, where), where + ": json $")
            else:
                self.match_json(exp, self._log_json(resp, where), where + ": log")
            return
        m = re.match(r"^problem:\s*(\S+)$", text)
        if m:
            self._problem(m.group(1).split("|"), resp, where)
            return
        m = re.match(r"^replay-of:\s*(\S+)$", text)
        if m:
            self._replay(self._response(m.group(1), where), resp, where)
            return
        m = re.match(r"^([!#$%&'*+.^_`|~0-9A-Za-z-]+):\s?(.*)$", text)
        if m:
            self._header(m.group(1), m.group(2), resp, where)
            return
        raise ScenarioError("%s: not an expectation: %s" % (where, text))

    def _response(self, name, where):
        if name not in self.responses:
            raise ScenarioError("%s: no response named %r" % (where, name))
        return self.responses[name]

    def _json(self, resp, where):
        try:
            return load_json(resp.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise Fail("%s: body is not JSON (%s): %r" %
                       (where, e, resp.body[:300]))

    def _log_json(self, resp, where):
        """The one JSON line of the responder's request log (IDEM_LOG=json)
        on its stderr: ASCII, and a JSON object without duplicate names."""
        lines = [ln for ln in resp.stderr.split(b"\n") if ln.startswith(b"{")]
        if len(lines) != 1:
            raise Fail("%s: expected one JSON log line on stderr, got %d: %r"
                       % (where, len(lines), resp.stderr[-600:]))
        try:
            doc = load_json(lines[0].decode("ascii"))
        except (ValueError, UnicodeDecodeError) as e:
            raise Fail("%s: the log line is not ASCII JSON (%s): %r" %
                       (where, e, lines[0][:300]))
        if not isinstance(doc, dict):
            raise Fail("%s: the log line is not an object: %r" %
                       (where, lines[0][:300]))
        return doc

    def _log_line(self, template, resp, where):
        """The responder's stderr holds exactly one request log line (one
        that starts with a digit: its time, under IDEM_LOG=text), and it
        matches the template whole, with placeholders as in headers."""
        lines = [ln for ln in resp.stderr.split(b"\n") if ln[:1].isdigit()]
        if len(lines) != 1:
            raise Fail("%s: expected one text log line on stderr, got %d: "
                       "%r" % (where, len(lines), resp.stderr[-600:]))
        self.match(template, lines[0].decode("utf-8", "surrogateescape"),
                   where + ": log line")

    def _utf8_body(self, resp, where):
        """The body is well-formed UTF-8 (RFC 3629); a JSON body also
        parses, and no string in it is a lone surrogate written as an
        escape (RFC 8259 section 8.2), which no UTF-8 decoder can take."""
        try:
            resp.body.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Fail("%s: body is not UTF-8 (%s): %r" %
                       (where, e, resp.body[:300]))
        ct = (resp.get("Content-Type") or "").split(";")[0].strip().lower()
        if ct != "application/json" and not ct.endswith("+json"):
            return
        stack = [self._json(resp, where)]
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                stack.extend(v.keys())
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
            elif isinstance(v, str) and not isinstance(v, Num):
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    raise Fail("%s: body escapes a lone surrogate: %r" %
                               (where, v))

    def _header(self, name, want, resp, where):
        got = resp.get(name)
        if got is None:
            raise Fail("%s: header %s missing (expected %r); headers: %s" %
                       (where, name, want, resp.headers))
        m = re.match(r"^~\s?(.*)$", want)
        if m:
            if not re.fullmatch(m.group(1), got):
                raise Fail("%s: header %s: expected a match of /%s/, got %r"
                           % (where, name, m.group(1), got))
            return
        m = re.match(r"^in\s+(\d+)\.\.(\d+)$", want)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if not re.fullmatch(r"\d+", got) or not lo <= int(got) <= hi:
                raise Fail("%s: header %s: expected an integer in %d..%d, "
                           "got %r" % (where, name, lo, hi, got))
            return
        self.match(want, got, "%s: header %s" % (where, name))

    def _problem(self, slugs, resp, where):
        ct = resp.get("Content-Type") or ""
        if ct.split(";")[0].strip().lower() != "application/problem+json":
            raise Fail("%s: Content-Type: expected application/problem+json,"
                       " got %r" % (where, ct))
        doc = self._json(resp, where)
        if not isinstance(doc, dict):
            raise Fail("%s: problem is not an object: %r" % (where, doc))
        types = ["/problems/%s.html" % s for s in slugs]
        if doc.get("type") not in types:
            raise Fail("%s: problem type: expected %s, got %r (detail %r)" %
                       (where, " or ".join(types), doc.get("type"),
                        doc.get("detail")))
        # The type must resolve to a page that explains it (RFC 9457 3.1.1).
        page = os.path.join(REPO, "www", doc["type"].lstrip("/"))
        if not os.path.isfile(page):
            raise Fail("%s: problem type %s has no page %s" %
                       (where, doc["type"], page))
        if not isinstance(doc.get("status"), Num) or \
                doc["status"] != str(resp.status):
            raise Fail("%s: problem status %r differs from the HTTP status "
                       "%s" % (where, doc.get("status"), resp.status))
        for member in ("title", "detail"):
            v = doc.get(member)
            if not isinstance(v, str) or isinstance(v, Num) or not v:
                raise Fail("%s: problem %s: expected a non-empty string, "
                           "got %r" % (where, member, v))

    def _replay(self, orig, resp, where):
        """Invariant 3: byte-identical status, body and stored headers.

        orig is normally the first answer; it may itself be a replay (when
        the first answer was lost to a fault point).
        """
        if resp.all("Idempotent-Replayed") != ["true"]:
            raise Fail("%s: expected Idempotent-Replayed: true, got %r" %
                       (where, resp.all("Idempotent-Replayed")))
        if resp.status != orig.status:
            raise Fail("%s: replay status %s, original %s had %s" %
                       (where, resp.status, orig.name, orig.status))
        if resp.body != orig.body:
            raise Fail("%s: replay body differs from %s's: expected %r, "
                       "got %r" % (where, orig.name, orig.body, resp.body))
        for name in {n.lower() for n, _ in orig.headers + resp.headers}:
            if name in REPLAY_EXEMPT:
                continue
            a, b = orig.all(name), resp.all(name)
            if a != b:
                raise Fail("%s: header %s: original %s had %r, replay has %r"
                           % (where, name, orig.name, a, b))

    # -- the store -----------------------------------------------------

    def check(self, step):
        want = {}
        for item in step.arg.split():
            k, eq, v = item.partition("=")
            if not eq or not v.isdigit():
                raise ScenarioError("line %d: check: NAME=N ..." % step.line)
            want[k] = v
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        for name, value in self.env.items():
            if value is not None:
                env[name] = self.subst(value, "line %d" % step.line)
        exe = os.path.join(self.build, "idemctl")
        try:
            p = subprocess.run([exe, "stats"], env=env, cwd=self.tmp,
                               stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise Fail("line %d: idemctl stats timed out" % step.line)
        out = p.stdout.decode("utf-8", "replace")
        if p.returncode != 0:
            raise Fail("line %d: idemctl stats exited %d: %s" %
                       (step.line, p.returncode,
                        p.stderr.decode("utf-8", "replace").strip()))
        got = {}
        for line in out.split("\n"):
            m = re.match(r"^\s*([A-Za-z_]+):\s*(\d+)\s*$", line)
            if m:
                got[m.group(1)] = m.group(2)
        bad = ["%s expected %s, got %s" % (k, v, got.get(k, "nothing"))
               for k, v in want.items() if got.get(k) != v]
        self.log.append("stats: %s" % " ".join("%s=%s" % kv for kv in
                                                got.items()))
        if bad:
            raise Fail("line %d: idemctl stats: %s" % (step.line,
                                                        "; ".join(bad)),
                       ["idemctl stats:"] + ["  " + l for l in
                                             out.strip().split("\n")])

    def ctl(self, step):
        """Runs idemctl ARGS with the scenario's environment (run:)."""
        self.run_program(step, "idemctl", step.arg)

    def run_program(self, step, program, argline):
        """Runs PROGRAM (idemctl, idem-fcgi, idem-provider or
        tests/cgi/claimctl of the build)
        with ARGS, split as a shell would split them, and the scenario's
        environment.  Indented lines: "exit: N" (default 0), "prints:
        TEXT" (on stdout or stderr)."""
        where = "line %d" % step.line
        if program not in ("idemctl", "idem-fcgi", "idem-provider",
                           "tests/cgi/claimctl"):
            raise ScenarioError("%s: run: idemctl, idem-fcgi, "
                                "idem-provider or tests/cgi/claimctl, not "
                                "%r" % (where, program))
        args = shlex.split(self.subst(argline, where))
        want_exit, prints = 0, []
        for lineno, text in step.body:
            k, _, v = text.partition(":")
            if k == "exit" and v.strip().isdigit():
                want_exit = int(v)
            elif k == "prints":
                prints.append(self.subst(v.strip(), "line %d" % lineno))
            else:
                raise ScenarioError("line %d: %s takes exit: and prints:"
                                    % (lineno, step.kind))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        for name, value in self.env.items():
            if value is not None:
                env[name] = self.subst(value, where)
        shown = " ".join([program] + [shlex.quote(a) for a in args])
        try:
            p = subprocess.run([os.path.join(self.build, program)] + args,
                               env=env, cwd=self.tmp,
                               stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise Fail("%s: %s timed out" % (where, shown))
        out = (p.stdout + p.stderr).decode("utf-8", "replace")
        self.log.append("%s: %s" % (shown, out.strip()))
        if p.returncode != want_exit:
            raise Fail("%s: %s exited %d, not %d" %
                       (where, shown, p.returncode, want_exit),
                       ["  " + l for l in out.strip().split("\n")])
        for text in prints:
            if text not in out:
                raise Fail("%s: %s did not print %r" % (where, shown, text),
                           ["  " + l for l in out.strip().split("\n")])

    def fifo(self, step):
        """fifo NAME: a FIFO {tmp}/NAME (its directories made), which
        nothing ever writes: where a program expects a file, opening it
        for reading would wait for ever."""
        path = os.path.join(self.tmp, step.arg)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.mkfifo(path, 0o600)

    def file(self, step):
        """file NAME: a regular file {tmp}/NAME holding one line of text
        (a "directory" the store cannot open), or the indented "line:
        TEXT" lines, substituted, each ending in a line feed."""
        path = os.path.join(self.tmp, step.arg)
        text = "not a directory\n"
        if step.body:
            text = ""
            for lineno, line in step.body:
                k, _, v = line.partition(":")
                if k != "line":
                    raise ScenarioError("line %d: file takes line: lines" %
                                        lineno)
                text += self.subst(v[1:] if v.startswith(" ") else v,
                                   "line %d" % lineno) + "\n"
        with open(path, "w", encoding="utf-8",
                  errors="surrogateescape") as f:
            f.write(text)

    def default_state(self):
        """The build's compiled-in state directory, LOCALSTATEDIR/lib/idem
        (where IDEM_DB_DIR and IDEM_PROVIDER_DB point when unset), read
        from the build's Makefile; None if it says nothing."""
        names = {}
        try:
            with open(os.path.join(self.build, "Makefile")) as f:
                for line in f:
                    k, eq, v = line.partition(" = ")
                    if eq and k in ("prefix", "localstatedir"):
                        names[k] = v.strip()
        except OSError:
            return None
        if "localstatedir" not in names:
            return None
        return os.path.join(names["localstatedir"].replace(
            "${prefix}", names.get("prefix", "")), "lib", "idem")

    def listing(self):
        """Every path under the scenario directory and the build's default
        state directory (and whether that exists), with its type and, for
        a regular file, its size: what a program that must create nothing
        would change."""
        seen = set()
        roots = [self.tmp]
        dflt = self.default_state()
        if dflt is not None:
            roots.append(dflt)
            seen.add((dflt, "exists", os.path.lexists(dflt)))
        for root in roots:
            for top, dirs, files in os.walk(root):
                for name in dirs + files:
                    path = os.path.join(top, name)
                    st = os.lstat(path)
                    size = st.st_size if stat.S_ISREG(st.st_mode) else 0
                    seen.add((os.path.relpath(path, self.tmp),
                              stat.S_IFMT(st.st_mode), size))
        return seen

    def snapshot(self, step):
        self.snapshots[step.arg] = self.listing()

    def unchanged(self, step):
        if step.arg not in self.snapshots:
            raise ScenarioError("line %d: unchanged %s: no such snapshot" %
                                (step.line, step.arg))
        before, now = self.snapshots[step.arg], self.listing()
        if before != now:
            raise Fail("line %d: the scenario directory changed since "
                       "snapshot %s" % (step.line, step.arg),
                       ["  new: %s" % p for p, _, _ in sorted(now - before)] +
                       ["  gone or changed: %s" % p for p, _, _ in
                        sorted(before - now)])

    def secret(self, step):
        """secret NAME: a new key file {tmp}/NAME (idemctl new-secret);
        secret NAME from A B ...: the keys of files A, B ... in order."""
        where = "line %d" % step.line
        words = step.arg.split()
        path = os.path.join(self.tmp, words[0])
        if len(words) == 1:
            p = subprocess.run([os.path.join(self.build, "idemctl"),
                                "new-secret", path], capture_output=True,
                               timeout=self.timeout)
            if p.returncode != 0:
                raise Fail("%s: idemctl new-secret: %s" % (where, p.stderr))
            return
        if len(words) < 3 or words[1] != "from":
            raise ScenarioError("%s: secret NAME [from A B ...]" % where)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            for name in words[2:]:
                with open(os.path.join(self.tmp, name)) as f:
                    out.write(f.read())

    def db_lacks(self, step):
        """No file of the idempotency store (not the provider's ledger,
        which stands for the provider's own system), nor its PostgreSQL
        database, contains the text's bytes."""
        self.store_lacks(step, ("db",))

    def store_lacks(self, step, subs=("db", "provider")):
        """No file of the store or the ledger contains the text's bytes."""
        where = "line %d" % step.line
        needle = self.subst(step.arg, where).encode("utf-8",
                                                    "surrogateescape")
        if not needle:
            raise ScenarioError("%s: store-lacks needs a text" % where)
        if self.pgdb is not None and needle in self.pg.dump(self.pgdb):
            raise Fail("%s: %r is stored in the PostgreSQL store" %
                       (where, needle))
        for sub in subs:
            for root, _, files in os.walk(os.path.join(self.tmp, sub)):
                for fn in files:
                    path = os.path.join(root, fn)
                    with open(path, "rb") as f:
                        if needle in f.read():
                            raise Fail("%s: %r is stored in %s" %
                                       (where, needle,
                                        os.path.relpath(path, self.tmp)))

    # -- driver --------------------------------------------------------

    def run(self):
        steps = parse_scenario(self.path)
        self.setup()
        failed = True
        try:
            for step in steps:
                try:
                    self.do(step)
                except Fail as f:
                    if self.failures:
                        # Report the earlier soft failures too.
                        self.failures.append(f)
                        f = self.failures.pop(0)
                        f.detail = ["also: " + str(x) for x in
                                    self.failures] + f.detail
                        f.args = ("%s (and %d more below)" %
                                  (f, len(self.failures)),)
                    raise f
            if self.spawned:
                raise ScenarioError("spawned but never awaited: %s" %
                                    ", ".join(self.spawned))
            if self.failures:
                first = self.failures[0]
                more = self.failures[1:]
                msg = str(first)
                if more:
                    msg += " (and %d more failure%s below)" % (
                        len(more), "s" if len(more) > 1 else "")
                raise Fail(msg, ["also: " + str(f) for f in more] +
                           first.detail)
            failed = False
        finally:
            self.teardown(failed)

    def do(self, step):
        kind = step.kind
        if kind in ("request", "spawn"):
            self.run_request(step)
            if kind == "spawn":
                self.current = None  # its answer comes with "await"
        elif kind == "expect":
            self.expect(step)
        elif kind == "check":
            try:
                self.check(step)
            except Fail as f:
                self.failures.append(f)
        elif kind == "store-lacks":
            self.store_lacks(step)
        elif kind == "db-lacks":
            self.db_lacks(step)
        elif kind == "ctl":
            self.ctl(step)
        elif kind == "run":
            program, _, rest = step.arg.partition(" ")
            self.run_program(step, program, rest)
        elif kind == "snapshot":
            self.snapshot(step)
        elif kind == "unchanged":
            self.unchanged(step)
        elif kind == "secret":
            self.secret(step)
        elif kind == "env":
            m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", step.arg)
            if not m:
                raise ScenarioError("line %d: env NAME=VALUE" % step.line)
            self.env[m.group(1)] = m.group(2)
        elif kind == "unset":
            self.env[step.arg] = None
        elif kind == "file":
            self.file(step)
        elif kind == "fifo":
            self.fifo(step)
        elif kind == "gate":
            self.gate(step)
        elif kind == "reached":
            self.reached(step)
        elif kind == "release":
            self.release(step)
        elif kind == "await":
            self.await_(step)
        if step.body and kind not in ("request", "spawn", "expect", "ctl",
                                      "run", "file"):
            raise ScenarioError("line %d: %s takes no indented lines" %
                                (step.line, kind))


def cgi_path_info(path):
    """PATH_INFO as a web server sets it (RFC 3875 section 4.1.5): the
    path percent-decoded, bytes that are not UTF-8 included.  The
    environment cannot hold a NUL byte, so "%00" alone stays encoded."""
    parts = re.split(r"(%00)", path)
    out = []
    for part in parts:
        if part == "%00":
            out.append(part)
            continue
        raw = urllib.parse.unquote_to_bytes(
            part.encode("utf-8", "surrogateescape"))
        out.append(raw.decode("utf-8", "surrogateescape"))
    return "".join(out)


def run_one(path, args):
    sc = Scenario(path, args.build, args.timeout, args.verbose, args.keep,
                  args.wrap, args.wrap_status)
    sc.pg = args.pg
    if args.pg is not None:
        with open(path, encoding="utf-8") as f:
            if LMDB_ONLY in f.read():
                return True, "ok - %s # skip: LMDB store only" % sc.name, []
    start = time.monotonic()
    try:
        sc.run()
        line, detail, ok = "ok - %s" % sc.name, [], True
    except Fail as f:
        line, detail, ok = "FAIL - %s: %s" % (sc.name, f), f.detail, False
    except ScenarioError as e:
        line, detail, ok = ("FAIL - %s: scenario error: %s" % (sc.name, e),
                            [], False)
    except Exception as e:  # a bug in this runner: still report, go on
        line, detail, ok = ("FAIL - %s: runner error: %s: %s" %
                            (sc.name, type(e).__name__, e), [], False)
    took = time.monotonic() - start
    extra = []
    if not ok or args.verbose:
        extra = ["    # " + l for l in detail]
        if not ok and args.keep:
            extra.append("    # kept %s" % sc.tmp)
        if args.verbose:
            extra += ["    # (%.2fs) " % took + l for l in sc.log]
    return ok, line, extra


def find_scenarios(names, directory):
    if not names:
        return sorted(os.path.join(directory, f) for f in
                      os.listdir(directory) if f.endswith(".t"))
    paths = []
    for n in names:
        if os.path.isfile(n):
            paths.append(n)
            continue
        p = os.path.join(directory, n if n.endswith(".t") else n + ".t")
        if not os.path.isfile(p):
            sys.exit("run.py: no scenario %r (looked for %s)" % (n, p))
        paths.append(p)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True,
                    help="directory holding idem-fcgi and idemctl")
    ap.add_argument("--timeout", type=float, default=30.0,
                    help="seconds per responder invocation (default 30)")
    ap.add_argument("-j", "--jobs", type=int, default=1,
                    help="scenarios run at once (default 1)")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print each scenario's steps")
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary directory of failed scenarios")
    ap.add_argument("--scenarios", metavar="DIR", default=SCENARIO_DIR,
                    help="directory of NAME.t files (default: "
                    "tests/cgi/scenarios)")
    ap.add_argument("--suite", default="cgi",
                    help="name on the closing line (default: cgi)")
    ap.add_argument("--wrap", metavar="CMD", default="",
                    help="run every responder under CMD (split like a "
                    "shell would), e.g. 'valgrind --error-exitcode=99'")
    ap.add_argument("--wrap-status", type=int, default=99, metavar="N",
                    help="exit status by which the --wrap command reports "
                    "an error of its own (default 99)")
    ap.add_argument("--store", choices=("lmdb", "pg"), default="lmdb",
                    help="the idempotency store: lmdb (default), or pg: a "
                    "throwaway PostgreSQL server (tests/lib/pg.py), a "
                    "fresh database per scenario")
    ap.add_argument("scenarios_named", nargs="*", metavar="scenario",
                    help="scenario names (default: all in the directory)")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.wrap = shlex.split(args.wrap)
    for exe in ("idem-fcgi", "idemctl"):
        p = os.path.join(args.build, exe)
        if not os.access(p, os.X_OK):
            sys.exit("run.py: %s is missing or not executable" % p)
    if args.wrap and shutil.which(args.wrap[0]) is None:
        sys.exit("run.py: --wrap: %s not found" % args.wrap[0])
    if not os.path.isdir(args.scenarios):
        sys.exit("run.py: no directory %s" % args.scenarios)
    paths = find_scenarios(args.scenarios_named, args.scenarios)
    results = Results()
    args.pg = None
    if args.store == "pg":
        if not pg.available():
            print("%s: no PostgreSQL server installed" % args.suite)
            results.add(False, "FAIL - PostgreSQL server")
            return results.summary(args.suite)
        args.pg = pg.Postgres().start()
    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
            futures = [ex.submit(run_one, p, args) for p in paths]
            for fut in futures:
                ok, line, extra = fut.result()
                results.add(ok, line)
                for l in extra:
                    print(l, flush=True)
    finally:
        if args.pg is not None:
            args.pg.stop()
    return results.summary(args.suite)


if __name__ == "__main__":
    sys.exit(main())
