# SPDX-License-Identifier: MIT
"""What the Python runners of tests/ share: the run's deadline, result
counting and the closing "SUITE: N passed, N failed" line (common), HTTP
on loopback (web), and the web servers with their workers, rendered from
etc/ (servers).  A runner puts tests/ on sys.path and imports lib.NAME.
Python 3 standard library only."""
