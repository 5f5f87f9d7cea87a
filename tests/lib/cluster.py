# SPDX-License-Identifier: MIT
"""A cluster of idem on one machine: a throwaway PostgreSQL server
(lib.pg), the provider service (lib.servers.ProviderService) and several
app hosts, each its own lighttpd with spawn-fcgi workers, temporary
directory, keys file and logs (lib.servers.Lighttpd), sharing only the
store and the provider.

    c = Cluster(build, args, hosts=2, env={"IDEM_LEASE": "3"})
    c.start()
    ... c.hosts[0].port, c.hosts[1].port, c.provider.stats(), c.stats(),
        c.kill_host(h), c.restart_postgres() ...
    c.cleanup()

args is what lib.servers.Instance reads (workers, latency_ms,
provider_timeout_ms, keep).  Every host has the same API secrets, so a
client may send its retry to any of them."""

import argparse
import http.client
import os
import signal
import subprocess

from lib import pg, servers
from lib.common import DEADLINE, kill_pids, proc_alive, proc_state, wait_gone
from lib.web import Reply, http_request

BODY = b'{"amount": 100.00, "currency": "BRL"}'


def pay(host, key, body=BODY):
    """POST /payments to host as acct_alpha with key: the Reply, or the
    exception that stood in for one (a reset, a refused connection)."""
    try:
        return http_request(host.port, "POST", "/payments", body, {
            "Authorization": f"Bearer {host.secrets['acct_alpha']}",
            "Content-Type": "application/json",
            "Idempotency-Key": f'"{key}"'})
    except (OSError, http.client.HTTPException) as e:
        return e


def brief(r):
    """One line for a failure message: a Reply's, or an exception's."""
    return r.brief() if isinstance(r, Reply) else f"{type(r).__name__}: {r}"


class Cluster:
    def __init__(self, build, args, hosts=2, env=None, base=None):
        """hosts app hosts (0: only the store and the provider, for hosts
        made elsewhere), each with env after etc/idem.env; base: where the
        PostgreSQL server keeps its files (lib.pg.Postgres)."""
        self.build = build
        self.pg = None
        self.provider_home = None
        self.hosts = []
        try:
            self._setup(args, hosts, env or {}, base)
        except BaseException:
            self.cleanup()
            raise

    def _setup(self, args, hosts, env, base):
        self.pg = pg.Postgres(base)
        self.pg.start()
        self.uri = self.pg.createdb("idem")
        self.migrate()
        self.provider_home = servers.ProviderOnly(
            "cluster-provider", self.build,
            argparse.Namespace(**dict(vars(args), provider_service=True)))
        self.provider = self.provider_home.provider
        self.env = {"IDEM_STORE": self.uri,
                    "IDEM_PROVIDER": "service",
                    "IDEM_PROVIDER_URL": self.provider.url,
                    "IDEM_PROVIDER_TIMEOUT_MS": str(getattr(
                        args, "provider_timeout_ms", 10000))}
        self.env.update(env)
        plain = argparse.Namespace(**dict(vars(args), provider_service=False))
        for i in range(hosts):
            self.hosts.append(servers.Lighttpd(
                f"cluster-{chr(ord('a') + i)}", self.build, plain))
        keys = seal = None
        for h in self.hosts:
            # The same accounts and API keys on every host, and the same
            # key file sealing the store they share.
            if keys is None:
                with open(os.path.join(h.state, "keys")) as f:
                    keys = f.read()
                with open(os.path.join(h.state, "secret")) as f:
                    seal = f.read()
                secrets = h.secrets
            else:
                with open(os.path.join(h.state, "keys"), "w") as f:
                    f.write(keys)
                with open(os.path.join(h.state, "secret"), "w") as f:
                    f.write(seal)
                h.secrets = secrets
            h.idem_env.update(self.env)

    def migrate(self):
        p = subprocess.run([os.path.join(self.build, "idemctl"), "-s",
                            self.uri, "migrate"], capture_output=True,
                           stdin=subprocess.DEVNULL,
                           timeout=DEADLINE.timeout(60))
        if p.returncode != 0:
            raise RuntimeError("idemctl migrate: "
                               + p.stderr.decode(errors="replace")[-300:])

    def start(self):
        self.provider_home.start()
        for h in self.hosts:
            h.start()

    def stats(self):
        """idemctl stats on the shared store, the charges the provider
        service counts (IDEM_PROVIDER_URL) among them."""
        return self.hosts[0].stats()

    def kill_host(self, h):
        """The whole host at once, as a machine failing: SIGKILL to its
        lighttpd and every worker."""
        pids = h.worker_pids()
        if h.server is not None:
            try:
                os.killpg(h.server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            h.server.wait(timeout=DEADLINE.timeout(10))
            h.server = None
        kill_pids(pids, signal.SIGKILL)
        if not wait_gone(pids, DEADLINE.timeout(30)):
            raise RuntimeError(f"{h.name}: workers still alive after SIGKILL: "
                               f"{[proc_state(p) for p in pids if proc_alive(p)]}")
        return pids

    def restart_postgres(self):
        """pg_ctl restart -m fast: every session is ended, the server is
        back when this returns."""
        subprocess.run(self.pg.restart_command(), shell=True, check=True,
                       timeout=DEADLINE.timeout(90))

    def log_tail(self):
        return "\n".join(h.log_tail() for h in self.hosts + [self.provider_home]) \
            + "\n" + servers.tail(self.pg.logfile)

    def cleanup(self):
        homes = self.hosts + ([self.provider_home] if self.provider_home else [])
        self.provider_home = None
        for h in homes:
            try:
                h.cleanup()
            except Exception:           # noqa: BLE001
                pass
            if h in servers.INSTANCES:
                servers.INSTANCES.remove(h)
        self.hosts = []
        if self.pg is not None:
            self.pg.stop()      # also removes what a failed start left
            self.pg = None
