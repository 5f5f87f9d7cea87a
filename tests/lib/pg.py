# SPDX-License-Identifier: MIT
"""A throwaway PostgreSQL server for the tests.

initdb in a temporary directory, the server on its own unix socket
directory and a free port, no TCP listener and no system service.  initdb
refuses to run as root, so as root the cluster belongs to the
"postgres" system user (runuser -u postgres).

As a module: Postgres().start(), .createdb(name), .uri(name), .psql(sql,
db), .query(sql, db) (the rows, as lists of text), .stop().  A server
declares itself a single unreplicated one (idem.replication = 'none',
which the store's check accepts when nothing streams from it) unless
started with single=False; .standby() makes a streaming standby of it
(pg_basebackup -R) on its own socket and port, a Postgres to stop.
As a program:

  python3 tests/lib/pg.py run [--suite NAME] -- CMD [ARGS...]...

starts a server, creates a database, and runs each CMD (commands are
separated by "--") with IDEM_TEST_PG set to its URI, IDEM_TEST_PG_BARE
to another database that nothing migrates, and IDEM_TEST_PG_RESTART to
a shell command that restarts the server; with --suite, the
"NAME: N passed, N failed" lines the commands print are summed into one.
"""

import glob
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile


def _bindir():
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                  key=lambda d: int(d.split("/")[-2].split(".")[0]))
    for d in reversed(dirs):
        if os.path.exists(os.path.join(d, "initdb")):
            return d
    raise RuntimeError("no PostgreSQL server: /usr/lib/postgresql/*/bin")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def available():
    try:
        _bindir()
        return True
    except RuntimeError:
        return False


class Postgres:
    def __init__(self, base=None, single=True):
        """base: the directory to make the server's own in (default the
        system's temporary directory); its file system is what a commit's
        flush costs.  single: the server says it stands alone
        (idem.replication = 'none'), as every test server but those of
        the replication tests does."""
        self.single = single
        self.bin = _bindir()
        self.tmp = tempfile.mkdtemp(prefix="idem-pg-", dir=base)
        os.chmod(self.tmp, 0o755)
        self.data = os.path.join(self.tmp, "data")
        self.sock = os.path.join(self.tmp, "sock")
        os.mkdir(self.sock)
        # The server writes its log where it may: beside its socket.
        self.logfile = os.path.join(self.sock, "server.log")
        self.port = _free_port()
        self.root = os.geteuid() == 0
        self.user = "postgres"
        if self.root:
            shutil.chown(self.sock, user="postgres")
        self.running = False

    def _cmd(self, args):
        if self.root:
            return ["runuser", "-u", "postgres", "--"] + args
        return args

    def _ctl(self, *args):
        subprocess.run(self._cmd([os.path.join(self.bin, "pg_ctl"), "-D",
                                  self.data, "-w", "-t", "60",
                                  "-l", self.logfile]
                                 + list(args)),
                       check=True, stdout=subprocess.DEVNULL)

    def start(self):
        if self.root:
            os.mkdir(self.data, 0o700)
            shutil.chown(self.data, user="postgres")
        subprocess.run(self._cmd([
            os.path.join(self.bin, "initdb"), "-D", self.data,
            "-U", self.user, "--auth=trust", "--no-sync", "-E", "UTF8",
            "--locale=C"]), check=True, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        self._start()
        return self

    def _start(self):
        # pg_ctl -w returns once the server accepts connections.
        self._ctl("-o", "-k %s -p %d -c listen_addresses= "
                  "-c max_connections=200 -c synchronous_commit=on%s" %
                  (self.sock, self.port, " -c idem.replication=none"
                   if self.single else ""), "start")
        self.running = True

    def standby(self, name="standby1"):
        """A streaming standby of this server: a base backup with its
        primary_conninfo (pg_basebackup -R, application_name name), on
        its own socket and port, started; a Postgres whose stop() stops
        and removes it."""
        sb = Postgres(os.path.dirname(self.tmp), single=False)
        if sb.root:
            os.mkdir(sb.data, 0o700)
            shutil.chown(sb.data, user="postgres")
        subprocess.run(self._cmd([
            os.path.join(self.bin, "pg_basebackup"), "-D", sb.data, "-R",
            "-X", "stream", "-c", "fast", "--no-sync", "-d",
            "host=%s port=%d user=%s application_name=%s" %
            (self.sock, self.port, self.user, name)]), check=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        sb._start()
        return sb

    def restart_command(self):
        """A shell command that restarts the server (fast shutdown)."""
        return " ".join(shlex.quote(a) for a in self._cmd([
            os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-w",
            "-t", "60", "-l", self.logfile,
            "-m", "fast", "restart"])) + " >/dev/null"

    def uri(self, db="postgres"):
        return "postgresql:///%s?host=%s&port=%d&user=%s" % (
            db, self.sock, self.port, self.user)

    def psql(self, sql, db="postgres"):
        subprocess.run([os.path.join(self.bin, "psql"), "-q", "-X",
                        "-v", "ON_ERROR_STOP=1", "-d", self.uri(db),
                        "-c", sql], check=True, stdout=subprocess.DEVNULL)

    def query(self, sql, db="postgres"):
        """The rows sql returns, each a list of its columns as text."""
        p = subprocess.run([os.path.join(self.bin, "psql"), "-q", "-X", "-At",
                            "-F", "\t", "-v", "ON_ERROR_STOP=1", "-d",
                            self.uri(db), "-c", sql], check=True,
                           capture_output=True, text=True)
        return [l.split("\t") for l in p.stdout.splitlines()]

    def createdb(self, name):
        self.psql('CREATE DATABASE "%s"' % name)
        return self.uri(name)

    def dump(self, db):
        """Every byte of the store's records and rows, concatenated."""
        p = subprocess.run([
            os.path.join(self.bin, "psql"), "-q", "-X", "-At", "-d",
            self.uri(db), "-c",
            "SELECT encode(scope || key || rec, 'hex') FROM idem_keys "
            "UNION ALL SELECT encode(convert_to(tbl, 'UTF8') || k || v, "
            "'hex') FROM idem_rows"], check=True, capture_output=True,
            text=True)
        return b"".join(bytes.fromhex(l) for l in p.stdout.split())

    def dropdb(self, name):
        self.psql('DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name)

    def stop(self):
        if self.running:
            self.running = False
            try:
                self._ctl("-m", "immediate", "stop")
            except subprocess.CalledProcessError:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)


def _run(argv):
    suite = None
    if argv[:1] == ["--suite"]:
        suite, argv = argv[1], argv[2:]
    cmds, cur = [], None
    for a in argv:
        if a == "--":
            cur = []
            cmds.append(cur)
        elif cur is not None:
            cur.append(a)
    cmds = [c for c in cmds if c]
    if not available():
        print("%s: no PostgreSQL server installed" % (suite or "pg"))
        if suite:
            print("%s: 0 passed, 1 failed" % suite)
        return 1
    pg = Postgres().start()
    passed = failed = 0
    rc = 0
    try:
        env = dict(os.environ, IDEM_TEST_PG=pg.createdb("idem_test"),
                   IDEM_TEST_PG_BARE=pg.createdb("idem_bare"),
                   IDEM_TEST_PG_RESTART=pg.restart_command())
        for c in cmds:
            p = subprocess.run(c, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            sys.stdout.write(p.stdout)
            found = re.findall(r"^\S+: (\d+) passed, (\d+) failed$",
                               p.stdout, re.M)
            if p.returncode != 0 or not found:
                rc = 1
                if not found:
                    failed += 1
            for a, b in found[-1:]:
                passed += int(a)
                failed += int(b)
    finally:
        pg.stop()
    if suite:
        print("%s: %d passed, %d failed" % (suite, passed, failed))
    return 1 if rc or failed else 0


if __name__ == "__main__":
    if sys.argv[1:2] != ["run"]:
        sys.stderr.write(__doc__)
        sys.exit(2)
    sys.exit(_run(sys.argv[2:]))
