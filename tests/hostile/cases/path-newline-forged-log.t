# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): a percent-encoded line feed in the path, which the
# web server decodes into PATH_INFO, followed by text shaped like a log
# line: 404, and the request log escapes it, so no forged line appears.

request hostile: GET /payments/%0A2026-01-01T00:00:00.000Z%20idem:%20127.0.0.1%20POST%20/payments%20201%20account=acct_bob%20key=-%20outcome=claim%20ms=1
  as alice
expect: 404
  problem: not-found
  stderr-lacks: {byte:0a}2026-01-01T00:00:00.000Z idem: 127.0.0.1 POST /payments 201
  stderr-lacks: idem: 127.0.0.1 POST /payments 201
check: keys=0 payments=0 charges=0
