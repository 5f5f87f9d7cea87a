# SPDX-License-Identifier: MIT
"""Faults that leave a process or a connection alive but silent: paused
processes and a TCP proxy that stops forwarding.

    p = Paused([pid, ...])   # SIGSTOP, by pid; p.resume() sends SIGCONT
    postgres_pids(node)      # a Patroni node's postmaster and its children
    node_pids(node)          # its Patroni (and Patroni's children) as well
    walreceiver_pid(c, node) # a standby's WAL receiver (pg_stat_wal_receiver)

    x = Proxy(port)          # 127.0.0.1:x.port forwards to 127.0.0.1:port
    x.stop(); x.resume()     # stop and resume forwarding, both directions
    x.stop_in_transaction()  # stop once the server says a transaction is open
    x.stop_in_transaction(after=(b"...", ...))
                             # ... one in which the client has sent those, in order
    x.upstream_ports()       # the proxy's own ports towards the server
    x.close()

A paused process keeps its sockets: the kernel still acknowledges what
peers send it, and TCP keepalives are answered, so a peer sees nothing
but silence.  The proxy does the same to a connection, as a middlebox
that black-holes traffic does, except that the kernel under it keeps
acknowledging too: while it is stopped it reads nothing, from either
side, and closes nothing, so each side's data waits in the socket
buffers and neither side learns that the other closed.  A connection
accepted while it is stopped is connected onwards only once it resumes.

Every process paused is continued by resume() or, failing that, by
resume_all() (the suites call it before they stop their processes): a
stopped process would not act on the SIGTERM that stops it cleanly.
Pids are the harness's own processes, never found by name.
"""

import os
import select
import signal
import socket
import threading
import time

from lib import patroni
from lib.common import HOST

_PAUSED = set()
_PAUSED_LOCK = threading.Lock()


class Paused:
    """Processes stopped with SIGSTOP, by pid, until resume()."""

    def __init__(self, pids):
        self.pids = []
        self.at = time.monotonic()
        for p in pids:
            self.add(p)

    def add(self, pid):
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            return
        self.pids.append(pid)
        with _PAUSED_LOCK:
            _PAUSED.add(pid)

    def resume(self):
        """SIGCONT to each, last stopped first."""
        for p in reversed(self.pids):
            try:
                os.kill(p, signal.SIGCONT)
            except ProcessLookupError:
                pass
            with _PAUSED_LOCK:
                _PAUSED.discard(p)
        self.pids = []

    def held(self):
        """Seconds since the processes were stopped."""
        return time.monotonic() - self.at


def resume_all():
    with _PAUSED_LOCK:
        pids = list(_PAUSED)
        _PAUSED.clear()
    for p in pids:
        try:
            os.kill(p, signal.SIGCONT)
        except ProcessLookupError:
            pass


def pause_postgres(node):
    """The node's postmaster stopped first (it forks no backend while
    stopped), then its children, listed again until none is left
    running: a Paused, empty when PostgreSQL is not running."""
    pm = node.postmaster()
    if pm is None:
        return Paused([])
    p = Paused([pm])
    for _ in range(20):
        fresh = [c for c in patroni._children(pm) if c not in p.pids]
        if not fresh:
            break
        for c in fresh:
            p.add(c)
    return p


def pause_node(node):
    """The whole node, as a machine that freezes: its Patroni (and any
    process Patroni runs) stopped, then its PostgreSQL as
    pause_postgres stops it."""
    pids = []
    if node.proc is not None and node.proc.poll() is None:
        pids.append(node.proc.pid)
    p = Paused(pids)
    for pid in pids:
        for c in patroni._children(pid):
            p.add(c)
    pg = pause_postgres(node)
    for pid in pg.pids:
        p.pids.append(pid)
    pg.pids = []
    return p


def pause_patroni(node):
    """The node's Patroni alone (PostgreSQL left running)."""
    pids = []
    if node.proc is not None and node.proc.poll() is None:
        pids.append(node.proc.pid)
    p = Paused(pids)
    for pid in pids:
        for c in patroni._children(pid):
            p.add(c)
    return p


def walreceiver_pid(cluster, node):
    """The pid of the standby node's WAL receiver, or None."""
    rows = cluster.node_query(node, "SELECT pid FROM pg_stat_wal_receiver")
    return int(rows[0][0]) if rows and rows[0] and rows[0][0] else None


# ReadyForQuery saying a transaction block is open: 'Z', length 5, 'T';
# saying none is: 'I'.
_IN_TRANSACTION = b"Z\x00\x00\x00\x05T"
_IDLE = b"Z\x00\x00\x00\x05I"


class Proxy:
    """A threaded TCP forwarder from 127.0.0.1:port to 127.0.0.1:target,
    a thread a direction a connection, with a switch that stops and
    resumes forwarding."""

    def __init__(self, target, name=""):
        self.target = target
        self.name = name
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((HOST, 0))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        self.forwarding = threading.Event()
        self.forwarding.set()
        self.closed = threading.Event()
        self.lock = threading.Lock()
        self.conns = []                 # (client socket, upstream socket)
        self.ports = set()              # upstream local ports, open
        self.armed = False
        self.after = None               # what the client must have sent first
        self.caught = None              # the upstream port stop_in_transaction stopped on
        self.stopped_at = None
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self):
        """Stops forwarding in both directions, at once."""
        with self.lock:
            self.armed = False
            if self.forwarding.is_set():
                self.stopped_at = time.monotonic()
            self.forwarding.clear()

    def stop_in_transaction(self, after=None):
        """Stops forwarding, both directions, right after the server's
        answer that ends with a transaction block open (ReadyForQuery
        'T') has gone to the client: the server's session is left idle
        in transaction, the client's next statement never arriving.
        With after (byte strings), only in a transaction block in which
        the client has sent each of them, in that order (in statements'
        text, say), since the server last said no block was open
        (ReadyForQuery 'I').  caught says which session (its upstream
        port)."""
        with self.lock:
            self.caught = None
            self.after = tuple(after) if after else None
            self.armed = True

    def disarm(self):
        with self.lock:
            self.armed = False

    def resume(self):
        with self.lock:
            self.armed = False
            self.stopped_at = None
            self.forwarding.set()

    def upstream_ports(self):
        with self.lock:
            return set(self.ports)

    def close(self):
        self.closed.set()
        self.forwarding.set()
        try:
            self.sock.close()
        except OSError:
            pass
        with self.lock:
            conns, self.conns = self.conns, []
        for pair in conns:
            for s in pair:
                if s is not None:
                    try:
                        s.close()
                    except OSError:
                        pass

    def _accept(self):
        while not self.closed.is_set():
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(c,),
                             daemon=True).start()

    def _wait_forwarding(self):
        while not self.closed.is_set():
            if self.forwarding.wait(0.1):
                return not self.closed.is_set()
        return False

    def _connect(self, c):
        if not self._wait_forwarding():
            c.close()
            return
        try:
            u = socket.create_connection((HOST, self.target), timeout=10)
            u.settimeout(None)
        except OSError:
            c.close()
            return
        port = u.getsockname()[1]
        pair = (c, u)
        with self.lock:
            self.conns.append(pair)
            self.ports.add(port)
        done = threading.Event()
        # What the client has sent in the open transaction block: how
        # many of the byte strings stop_in_transaction waits for, and its
        # last bytes (a string may straddle two reads).
        block = {"step": 0, "tail": b""}
        threading.Thread(target=self._pump, args=(c, u, None, done, block),
                         daemon=True).start()
        self._pump(u, c, port, done, block)
        done.wait()
        with self.lock:
            if pair in self.conns:
                self.conns.remove(pair)
            self.ports.discard(port)
        for s in pair:
            try:
                s.close()
            except OSError:
                pass

    def _seen(self, block, data):
        """The client's data, looked through for the byte strings
        stop_in_transaction waits for."""
        with self.lock:
            after = self.after if self.armed else None
        if not after:
            return
        seen = block["tail"] + data
        while block["step"] < len(after):
            want = after[block["step"]]
            i = seen.find(want)
            if i < 0:
                block["tail"] = seen[-(len(want) - 1):] if len(want) > 1 \
                    else b""
                return
            block["step"] += 1
            seen = seen[i + len(want):]
        block["tail"] = b""

    def _pump(self, src, dst, port, done, block):
        """src to dst while forwarding; port is set for the server's
        direction (upstream to client), block is the connection's
        transaction block as the client's direction sees it.  Either
        side's end or error ends both directions."""
        try:
            while not self.closed.is_set() and not done.is_set():
                if not self.forwarding.wait(0.1):
                    continue
                try:
                    r, _, _ = select.select([src], [], [], 0.1)
                except (OSError, ValueError):
                    break
                if not r or not self.forwarding.is_set():
                    continue
                data = src.recv(65536)
                if not data:
                    break
                if port is None:
                    self._seen(block, data)
                elif data.endswith(_IDLE):
                    # Before the client hears it, so before it can send
                    # what opens the next block.
                    block["step"] = 0
                    block["tail"] = b""
                dst.sendall(data)
                if port is not None and data.endswith(_IN_TRANSACTION):
                    with self.lock:
                        if self.armed and (self.after is None or
                                           block["step"] == len(self.after)):
                            self.armed = False
                            self.caught = port
                            self.stopped_at = time.monotonic()
                            self.forwarding.clear()
        except OSError:
            pass
        finally:
            if not done.is_set():
                done.set()
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
