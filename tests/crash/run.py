#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Crash safety (invariant 5): kill -9 anywhere, retry, exactly one charge.

    python3 tests/crash/run.py --build BUILD_DIR [--only cgi|live|load ...]
                               [--server lighttpd-spawn|apache] [--seed N]

BUILD_DIR holds idem-fcgi and idemctl built with --enable-fault-points.

Three parts, each with "ok - crash ..." / "FAIL - crash ...: why" lines:

  cgi   the responder as a plain CGI child with a pinned clock
        (IDEM_TEST_NOW_MS): for every fault point, die there by SIGKILL, retry
        inside the lease (409 + Retry-After, or the replay once completed),
        retry after the lease (the take-over, or the replay), replay twice
        more; one charge, one payment, nothing stuck, replays byte-identical.
        Plus "kill twice" and "crash, then another body".
  live  the same through a real server that respawns dead workers
        (lighttpd-spawn from tests/live/run.py, or Apache mod_fcgid), one
        server per fault point with IDEM_FAULT=POINT:killonce=MARKER and
        IDEM_LEASE=2, the client honouring Retry-After like a real one.
  load  40 client threads paying through a live server while a killer thread
        sends SIGKILL to random workers (seeded RNG, seed printed); then every
        key has its 201, one charge and one payment, no key stuck, and every
        key's replay equals its 201.
  pg    (--store pg only) a schema newer than the program: idemctl migrate
        refuses it and changes nothing, the responder answers 503; a session
        the server terminates while a worker stands between the statements
        of a claim or a completion: 503, nothing half written, one charge
        after the retries, and the worker's pool mends without a restart.

With --store pg every part runs on a throwaway PostgreSQL server
(tests/lib/pg.py): a fresh database per CGI case and per live server.

The matrices and figures are printed; the last line is
"crash: N passed, M failed" and the exit status is 0 iff M == 0.  Python 3
standard library only; loopback only; everything under one global deadline;
servers and workers are stopped on every exit path.
"""

import argparse
import atexit
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib.common import DEADLINE, become_subreaper, note  # noqa: E402
from lib.servers import cleanup_all  # noqa: E402
from crashlib import CONF, RESULTS  # noqa: E402
import part_cgi as part_cgi_module  # noqa: E402
from part_cgi import part_cgi  # noqa: E402
from lib import pg  # noqa: E402
from part_live import part_live, pick_server  # noqa: E402
from part_load import part_load  # noqa: E402
from part_pg import part_pg  # noqa: E402


# ---------------------------------------------------------------- main



def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory (fault points on)")
    ap.add_argument("--only", action="append", choices=("cgi", "live", "load", "pg"),
                    help="part to run (repeatable; default: all)")
    ap.add_argument("--server", choices=("lighttpd-spawn", "apache"),
                    help="live server (default: lighttpd-spawn, else apache)")
    ap.add_argument("--workers", type=int, default=4, help="workers for the live matrix")
    ap.add_argument("--load-workers", type=int, default=6, help="workers under load")
    ap.add_argument("--clients", type=int, default=40, help="client threads under load")
    ap.add_argument("--kills", type=int, default=25, help="SIGKILLs under load")
    ap.add_argument("--latency-ms", type=int, default=50,
                    help="IDEM_PROVIDER_LATENCY_MS under load")
    ap.add_argument("--seed", type=int, help="seed of the killer (default: random, printed)")
    ap.add_argument("--deadline", type=float, default=230, help="whole run, seconds")
    ap.add_argument("--keep", action="store_true", help="keep temp dirs of failures")
    ap.add_argument("--store", choices=("lmdb", "pg"), default="lmdb",
                    help="idempotency store: lmdb (default) or pg, a throwaway "
                    "PostgreSQL server (tests/lib/pg.py), a fresh database per CGI "
                    "case and per live instance")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    DEADLINE.reset(args.deadline)
    CONF.verbose = args.verbose
    CONF.build = args.build = os.path.abspath(args.build)
    parts = args.only or ["cgi", "live", "load"]
    suite = "crash"
    if args.store == "pg":
        suite = "crash-pg"
        parts = args.only or ["cgi", "live", "load", "pg"]
        if not pg.available():
            print("FAIL - crash setup: no PostgreSQL server installed")
            print(f"{suite}: 0 passed, 1 failed")
            return 1
        CONF.pg = part_cgi_module.PG = pg.Postgres().start()
        atexit.register(CONF.pg.stop)
    if args.workers < 4:
        ap.error("--workers must be >= 4")

    for prog in ("idem-fcgi", "idemctl"):
        if not os.access(os.path.join(CONF.build, prog), os.X_OK):
            print(f"FAIL - crash setup: {CONF.build}/{prog} missing")
            print(f"{suite}: 0 passed, 1 failed")
            return 1

    atexit.register(cleanup_all)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))

    started = time.monotonic()
    try:
        if "cgi" in parts:
            part_cgi(args)
        if "live" in parts or "load" in parts or ("pg" in parts and CONF.pg):
            become_subreaper()
            t0 = time.monotonic()
            server, why = pick_server(args)
            for w in why:
                note(f"server not usable: {w}")
            if server is None:
                RESULTS.fail("live: start", "no respawning server could be started:\n"
                             + "\n".join(why))
            else:
                note(f"live server: {server} (probe {time.monotonic() - t0:.1f} s)")
                if "live" in parts:
                    part_live(args, server)
                if "pg" in parts and CONF.pg:
                    part_pg(args, server)
                if "load" in parts:
                    if DEADLINE.left() < 30:
                        RESULTS.fail(f"load {server}", "global deadline too close")
                    else:
                        try:
                            part_load(args, server)
                        except Exception as e:      # noqa: BLE001
                            RESULTS.fail(f"load {server}", f"{type(e).__name__}: {e}")
    except (SystemExit, KeyboardInterrupt) as e:
        RESULTS.fail("run", f"interrupted ({type(e).__name__} {e})")
    finally:
        cleanup_all()
    note(f"total: {time.monotonic() - started:.1f} s")
    return RESULTS.summary(suite)


if __name__ == "__main__":
    sys.exit(main())
