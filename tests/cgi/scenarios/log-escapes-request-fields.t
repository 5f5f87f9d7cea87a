# Log injection (finding: the decoded path was logged raw, so a request
# for /payments/%0Aidem:... wrote a forged line into the web server's
# error log).  Every field taken from the request is escaped (\xHH for
# bytes outside printable ASCII): the log holds one line per request.
# The path is no route's (its segments hold "/"), so it is 404 with or
# without credentials (doc/DESIGN.md, "The application's layers").

request forged: GET /payments/%0A2026-01-01T00:00:00.000Z%20idem:%20203.0.113.9%20POST%20/payments%20201%20account=acct_bob%20key=-%20outcome=claim
  as alice
expect: 404
  problem: not-found
  stderr-lacks: {byte:0a}2026-01-01T00:00:00.000Z idem: 203.0.113.9 POST
  stderr-lacks: idem: 203.0.113.9 POST

request unauthenticated: like forged
  drop Authorization
expect: 404
  problem: not-found
  stderr-lacks: {byte:0a}2026-01-01T00:00:00.000Z
  stderr-lacks: {byte:0a}idem:
