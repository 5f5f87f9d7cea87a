# SPDX-License-Identifier: MIT
"""A replicated PostgreSQL on one machine: etcd and three Patroni nodes.

    c = PatroniCluster(base=None, nodes=3).start()
    c.create_database("idem")  # on the leader; returns once every node has it
    c.uri("idem")            # every node, target_session_attrs=read-write
    c.leader(), c.members()  # from Patroni's REST API
    c.kill_node(name)        # SIGKILL to its Patroni, postmaster, backends
    c.start_node(name)       # Patroni again: it rejoins as a standby
    c.stop()

etcd (one member, loopback client and peer ports, its data in the
temporary directory) is Patroni's DCS through its v2 API (Patroni's
"etcd", etcd started with --enable-v2), not its v3 API ("etcd3"):
Patroni 3.0.2's etcd3 refreshes the leader key by re-creating its lease
and writing the key unconditionally, so a leader whose loop stalled past
the ttl (its PostgreSQL stopped, say) takes the key back from the
standby promoted meanwhile when it resumes, and the new primary is
demoted and rewound, its acknowledged commits lost (fixed after 3.0.2).
Through v2 the refresh is a compare-and-swap on the key's value, which
fails for the stale leader: it demotes itself and rejoins as a standby
(doc/DESIGN.md, "Failover", says what v2 still leaves open).  Each node
is Patroni 3.0 managing PostgreSQL from /usr/lib/postgresql/*/bin in a
data directory of its own, on a unix socket of its own and a loopback
port, with its REST API on another loopback port.  As root,
Patroni and PostgreSQL run as the "postgres" user (initdb refuses
root).

The cluster runs with synchronous_mode and synchronous_mode_strict:
Patroni sets synchronous_standby_names itself, promotes only the
synchronous standby, and never lets the primary commit without one
(with none, it sets '*' and commits wait).  Patroni 3.0 has no quorum
('ANY 1 (...)' arrived in Patroni 4): with synchronous_node_count 1 and
two standbys, synchronous_standby_names names one of them, and when
that one is lost Patroni names the other at its next loop.  A standby
that dies closes its connection and is replaced within about a
loop_wait; one that is alive but silent (its WAL receiver stalled)
keeps its connection until the primary's wal_sender_timeout ends it, so
that is short (5 s, with the standbys' wal_receiver_status_interval at
1 s so a healthy one is never silent that long).  ttl, loop_wait
and retry_timeout are short (8, 1 and 3 s) so a failover takes seconds;
use_pg_rewind (with wal_log_hints) lets a killed primary rejoin as a
standby of the new one.

Everything listens on 127.0.0.1 or a unix socket; the harness stops only
the processes it started, by pid (and the postmaster and backends of its
own data directories, read from postmaster.pid).
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

from lib import pg
from lib.common import free_port

PATRONI = "/usr/bin/patroni"
ETCD = "/usr/bin/etcd"
TTL, LOOP_WAIT, RETRY_TIMEOUT = 8, 1, 3


def available():
    return os.access(PATRONI, os.X_OK) and os.access(ETCD, os.X_OK) \
        and pg.available()


def _children(pid):
    """The pids whose parent is pid (from /proc)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command may hold spaces and parentheses: ppid follows the last ")".
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(d))
    return out


def _exists(pid):
    """Whether pid names a process, a zombie included."""
    return os.path.exists(f"/proc/{pid}")


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _postmaster_zombie(pid):
    """Whether pid is a PostgreSQL process that exited and awaits its
    parent (a stale postmaster.pid's pid reused by another process is
    never taken for one)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    comm = stat[stat.find("(") + 1:stat.rfind(")")]
    return comm == "postgres" and stat.rsplit(")", 1)[1].split()[0] == "Z"


class Node:
    def __init__(self, cluster, name):
        self.cluster = cluster
        self.name = name
        self.dir = os.path.join(cluster.tmp, name)
        self.data = os.path.join(self.dir, "data")
        self.sock = os.path.join(self.dir, "sock")
        self.port = free_port()
        self.rest = free_port()
        self.log = os.path.join(self.dir, "patroni.log")
        self.conf = os.path.join(self.dir, "patroni.yml")
        self.proc = None
        self.logf = None

    def config(self):
        c = self.cluster
        return {
            "scope": c.scope, "name": self.name,
            "log": {"level": "INFO"},
            "restapi": {"listen": f"127.0.0.1:{self.rest}",
                        "connect_address": f"127.0.0.1:{self.rest}"},
            # etcd's v2 API, not etcd3: see the module's comment.
            "etcd": {"hosts": [f"127.0.0.1:{c.etcd_port}"]},
            "bootstrap": {
                "dcs": {
                    "ttl": TTL, "loop_wait": LOOP_WAIT,
                    "retry_timeout": RETRY_TIMEOUT,
                    "maximum_lag_on_failover": 1048576,
                    "primary_start_timeout": 0,
                    "synchronous_mode": True,
                    "synchronous_mode_strict": True,
                    "synchronous_node_count": 1,
                    "postgresql": {
                        "use_pg_rewind": True,
                        "use_slots": True,
                        "parameters": {
                            "wal_log_hints": "on",
                            "max_connections": 200,
                            "max_wal_senders": 10,
                            "max_replication_slots": 10,
                            "wal_keep_size": "256MB",
                            "hot_standby": "on",
                            "synchronous_commit": "on",
                            # A silent synchronous standby (alive, its WAL
                            # receiver stalled) loses its stream after
                            # wal_sender_timeout, and Patroni then names
                            # the other standby: commits wait that long,
                            # not the default minute.  A healthy standby
                            # answers every second, so is never taken for
                            # a silent one.
                            "wal_sender_timeout": "5s",
                            "wal_receiver_status_interval": "1s",
                        },
                    },
                },
                "initdb": [{"encoding": "UTF8"}, {"locale": "C"}],
                "pg_hba": [
                    "local all all trust",
                    "local replication all trust",
                    "host all all 127.0.0.1/32 trust",
                    "host replication all 127.0.0.1/32 trust",
                ],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{self.port}",
                "connect_address": f"127.0.0.1:{self.port}",
                "data_dir": self.data,
                "bin_dir": c.bin,
                "pgpass": os.path.join(self.dir, "pgpass"),
                "authentication": {
                    "superuser": {"username": "postgres"},
                    "replication": {"username": "postgres"},
                    "rewind": {"username": "postgres"},
                },
                "parameters": {"unix_socket_directories": self.sock},
                "pg_hba": [
                    "local all all trust",
                    "local replication all trust",
                    "host all all 127.0.0.1/32 trust",
                    "host replication all 127.0.0.1/32 trust",
                ],
            },
            "tags": {"nofailover": False, "noloadbalance": False,
                     "clonefrom": False, "nosync": False},
        }

    def setup(self):
        os.makedirs(self.sock, exist_ok=True)
        # Patroni's configuration as JSON, which is YAML.
        with open(self.conf, "w") as f:
            json.dump(self.config(), f, indent=1)
        if self.cluster.root:
            for p in (self.dir, self.sock, self.conf):
                shutil.chown(p, user="postgres", group="postgres")

    def start(self):
        if self.proc is not None and self.proc.poll() is None:
            return
        kw = {}
        if self.cluster.root:
            kw = {"user": "postgres", "group": "postgres", "extra_groups": []}
        self.logf = open(self.log, "ab")
        self.proc = subprocess.Popen([PATRONI, self.conf], stdin=subprocess.DEVNULL,
                                     stdout=self.logf, stderr=subprocess.STDOUT,
                                     cwd=self.dir, start_new_session=True, **kw)

    def postmaster(self):
        """The pid of this node's postmaster, or None."""
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                pid = int(f.readline())
        except (OSError, ValueError):
            return None
        return pid if _alive(pid) else None

    def postmasters_seen(self, seen):
        """Adds the pid in postmaster.pid, if any, to the set seen."""
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                seen.add(int(f.readline()))
        except (OSError, ValueError):
            pass

    def kill(self):
        """SIGKILL to Patroni, the postmaster and its children at once, as
        when the machine dies.  The pids killed."""
        pids = []
        if self.proc is not None and self.proc.poll() is None:
            pids.append(self.proc.pid)
        pm = self.postmaster()
        if pm is not None:
            pids.append(pm)
            pids.extend(_children(pm))
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc is not None:
            self.proc.wait(timeout=30)
        # The postmaster, orphaned by Patroni's death, is reparented to
        # a subreaper (the suites are theirs: lib.common.become_subreaper)
        # which must reap it: Patroni, started again, takes a zombie
        # still named in postmaster.pid for a server that runs.
        end = time.monotonic() + 30
        while time.monotonic() < end and any(_exists(p) for p in pids):
            for p in pids:
                try:
                    os.waitpid(p, os.WNOHANG)
                except ChildProcessError:
                    pass
            time.sleep(0.05)
        if any(_exists(p) for p in pids):
            raise RuntimeError(f"{self.name}: still there after SIGKILL: "
                               f"{[p for p in pids if _exists(p)]}")
        if self.logf:
            self.logf.close()
            self.logf = None
        return pids

    def stop(self):
        """Patroni's own stop (SIGTERM: it stops PostgreSQL), then
        SIGKILL to whatever of ours is left."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def api(self, path):
        """GET path of this node's REST API: (status, JSON body)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.rest}{path}",
                                        timeout=3) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            try:
                return e.code, json.loads(e.read() or b"{}")
            except ValueError:
                return e.code, {}
        except (OSError, ValueError):
            return None, {}

    def tail(self, n=40):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


class PatroniCluster:
    def __init__(self, base=None, nodes=3, scope="idem"):
        self.bin = pg._bindir()
        self.root = os.geteuid() == 0
        self.tmp = tempfile.mkdtemp(prefix="idem-ha-", dir=base)
        os.chmod(self.tmp, 0o755)
        self.scope = scope
        self.etcd_port = free_port()
        self.etcd_peer = free_port()
        self.etcd = None
        self.etcd_log = os.path.join(self.tmp, "etcd.log")
        self.nodes = [Node(self, f"node{i + 1}") for i in range(nodes)]
        self._reaper = None
        self._reaper_stop = threading.Event()

    def _reap_postmasters(self):
        """Patroni starts PostgreSQL through a process that exits, so each
        postmaster is orphaned and reparented to a subreaper, when the
        suite is one (lib.common.become_subreaper), not to Patroni.  When
        Patroni stops one (a standby stopped for pg_rewind, a restart) it
        waits until the pid is gone, and a zombie nobody reaps is never
        gone: the node hangs "running pg_rewind ... in progress" and the
        leader has no synchronous standby.  So every postmaster pid seen
        in the nodes' postmaster.pid is reaped, by pid, once it exits;
        nothing else of the process's children is touched."""
        seen = set()
        while not self._reaper_stop.wait(0.1):
            for n in self.nodes:
                n.postmasters_seen(seen)
            for pid in list(seen):
                if not _exists(pid):
                    seen.discard(pid)
                elif _postmaster_zombie(pid):
                    try:
                        os.waitpid(pid, os.WNOHANG)
                    except ChildProcessError:
                        pass        # another parent's, which reaps it

    def node(self, name):
        return next(n for n in self.nodes if n.name == name)

    def start(self, timeout=120):
        """etcd, then the first node (it bootstraps the cluster), then the
        others (each cloned from the leader); returns once there is a
        leader, every node runs and one is the synchronous standby."""
        url = f"http://127.0.0.1:{self.etcd_port}"
        peer = f"http://127.0.0.1:{self.etcd_peer}"
        self._etcd_logf = open(self.etcd_log, "ab")
        self.etcd = subprocess.Popen(
            [ETCD, "--name", "etcd1",
             "--data-dir", os.path.join(self.tmp, "etcd"),
             "--listen-client-urls", url, "--advertise-client-urls", url,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"etcd1={peer}",
             "--initial-cluster-state", "new",
             "--initial-cluster-token", os.path.basename(self.tmp),
             "--enable-v2=true"],
            stdin=subprocess.DEVNULL, stdout=self._etcd_logf,
            stderr=subprocess.STDOUT, start_new_session=True)
        self.wait("etcd answers", lambda: self._etcd_ok(url), 30)
        for n in self.nodes:
            n.setup()
        self._reaper = threading.Thread(target=self._reap_postmasters,
                                        daemon=True)
        self._reaper.start()
        self.nodes[0].start()
        self.wait("a leader", lambda: self.leader() is not None, timeout)
        for n in self.nodes[1:]:
            n.start()
        self.wait_healthy(timeout)
        return self

    def _etcd_ok(self, url):
        if self.etcd.poll() is not None:
            raise RuntimeError("etcd exited:\n" + self.etcd_tail())
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                return b'"true"' in r.read()
        except OSError:
            return False

    def etcd_tail(self):
        with open(self.etcd_log, errors="replace") as f:
            return "".join(f.readlines()[-20:])

    def wait(self, what, cond, seconds):
        """A bounded poll of cond."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if cond():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{what}: not within {seconds} s\n" + self.tails())

    def members(self):
        """Patroni's view of the cluster (GET /cluster on any node that
        answers): a list of {"name", "role", "state", "lag", ...}."""
        for n in self.nodes:
            st, body = n.api("/cluster")
            if st == 200 and "members" in body:
                return body["members"]
        return []

    def leader(self):
        """The name of the running leader, or None."""
        for m in self.members():
            if m.get("role") == "leader" and m.get("state") == "running":
                return m["name"]
        return None

    def sync_standby(self):
        for m in self.members():
            if m.get("role") == "sync_standby" and m.get("state") in (
                    "running", "streaming"):
                return m["name"]
        return None

    def healthy(self, expect=None):
        """A running leader, every node (or those named in expect) up by
        its own REST API (the DCS keeps a dead node's member key until
        its ttl ends), one of them the synchronous standby."""
        for n in self.nodes:
            if expect is not None and n.name not in expect:
                continue
            st, body = n.api("/patroni")
            if body.get("state") != "running":
                return False
            if body.get("role") not in ("master", "primary", "replica",
                                        "standby_leader"):
                return False
        return self.leader() is not None and self.sync_standby() is not None

    def wait_healthy(self, timeout=120, expect=None):
        self.wait("a leader, every node running and a synchronous standby",
                  lambda: self.healthy(expect), timeout)

    def leader_node(self):
        """The leader's Node, by each node's own REST API (GET /leader
        answers 200 only on the node that holds the leader key), or
        None."""
        for n in self.nodes:
            if n.api("/leader")[0] == 200:
                return n
        return None

    def leader_uri(self, db="postgres"):
        """The leader alone, as a libpq URI (ValueError when there is no
        leader)."""
        n = self.leader_node()
        if n is None:
            raise ValueError("no leader")
        return (f"postgresql://postgres@127.0.0.1:{n.port}/{db}"
                "?target_session_attrs=read-write")

    def has_database(self, node, name):
        """Whether node's own server lists the database name."""
        try:
            return self.node_query(node, "SELECT 1 FROM pg_database WHERE "
                                   f"datname = '{name}'") == [["1"]]
        except (RuntimeError, subprocess.TimeoutExpired):
            return False

    def create_database(self, name, timeout=60):
        """CREATE DATABASE name on the leader, unless it has it; returns
        once every node whose Patroni runs has it too.  uri(name) reaches
        the primary only then: libpq tries the next host after a refused
        connection or a read-only session, but not after a standby
        answered that the database does not exist, as one that has not
        replayed the CREATE DATABASE yet does."""
        if not name.replace("_", "").isalnum():
            raise ValueError(f"database name {name!r}")
        end = time.monotonic() + timeout
        while True:
            try:
                uri = self.leader_uri()
                psql = [os.path.join(self.bin, "psql"), "-q", "-X", "-At",
                        "-v", "ON_ERROR_STOP=1", "-d", uri, "-c"]
                have = subprocess.run(
                    psql + [f"SELECT 1 FROM pg_database WHERE datname = '{name}'"],
                    check=True, capture_output=True, text=True, timeout=60)
                if have.stdout.strip() != "1":
                    subprocess.run(psql + [f'CREATE DATABASE "{name}"'], check=True,
                                   capture_output=True, text=True, timeout=60)
                break
            except (ValueError, subprocess.CalledProcessError) as e:
                # No leader yet, or the leader changed under us.
                if time.monotonic() >= end:
                    raise RuntimeError(f"CREATE DATABASE {name}: {e}\n"
                                       + self.tails()) from e
                time.sleep(0.2)
        self.wait(f"every node has the database {name}",
                  lambda: all(self.has_database(n, name) for n in self.nodes
                              if n.proc is not None and n.proc.poll() is None),
                  max(1.0, end - time.monotonic()))

    def uri(self, db="postgres"):
        """Every node, the primary found by target_session_attrs."""
        hosts = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        return (f"postgresql://postgres@{hosts}/{db}"
                "?target_session_attrs=read-write")

    def psql(self, sql, db="postgres", query=False):
        """sql on the primary; with query, the rows as lists of text."""
        p = subprocess.run([os.path.join(self.bin, "psql"), "-q", "-X", "-At",
                            "-F", "\t", "-v", "ON_ERROR_STOP=1",
                            "-d", self.uri(db), "-c", sql],
                           check=True, capture_output=True, text=True,
                           timeout=60)
        return [ln.split("\t") for ln in p.stdout.splitlines()] if query else None

    def node_query(self, node, sql, db="postgres"):
        """sql on one node's own socket (a standby too)."""
        p = subprocess.run([os.path.join(self.bin, "psql"), "-q", "-X", "-At",
                            "-F", "\t", "-d",
                            f"postgresql:///{db}?host={node.sock}&port={node.port}"
                            "&user=postgres", "-c", sql],
                           capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            raise RuntimeError(f"{node.name}: {p.stderr.strip()}")
        return [ln.split("\t") for ln in p.stdout.splitlines()]

    def kill_node(self, name):
        return self.node(name).kill()

    def start_node(self, name):
        self.node(name).start()

    def tails(self):
        return "\n".join(f"--- {n.name}\n{n.tail()}" for n in self.nodes)

    def stop(self, keep=False):
        """Every node killed (the data is thrown away: nothing to stop
        cleanly), etcd too; the temporary directory removed unless keep."""
        if self._reaper is not None:
            self._reaper_stop.set()
            self._reaper.join(timeout=10)
            self._reaper = None
        for n in self.nodes:
            try:
                n.kill()
            except Exception:       # noqa: BLE001
                pass
        if self.etcd is not None and self.etcd.poll() is None:
            self.etcd.kill()
            self.etcd.wait(timeout=30)
        self.etcd = None
        if not keep:
            shutil.rmtree(self.tmp, ignore_errors=True)
