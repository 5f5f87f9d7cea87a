# DESIGN.md lists GET /metrics in the Prometheus text format (claims,
# replays, 409s, 422s, ...).  It counts every account's traffic together,
# so only the monitoring account (IDEM_METRICS_ACCOUNT) may read it:
# without credentials or with bad ones 401, as another account 403, and
# as the monitoring account 200 text/plain with at least one "# TYPE" line.

request create: POST /payments
  as alice
  Idempotency-Key: "m-1"
  Content-Type: application/json
  body: {"amount": 1.00, "currency": "BRL"}
expect: 201

request replay: like create
expect: 201
  replay-of: create

request anonymous: GET /metrics
expect: 401
  problem: unauthorized
  WWW-Authenticate: Bearer realm="idem"

request wrong-key: GET /metrics
  Authorization: Bearer sk_test_nobody_0000000000000
expect: 401
  problem: unauthorized

# A REMOTE_USER naming the monitoring account is ignored in bearer mode.
request claimed: GET /metrics
  env REMOTE_USER=metrics
expect: 401
  problem: unauthorized

# A valid account that is not the monitoring account (default "metrics").
request customer: GET /metrics
  as alice
expect: 403
  problem: forbidden

request customer-head: HEAD /metrics
  as alice
expect: 403

# bob becomes the monitoring account.
env IDEM_METRICS_ACCOUNT=acct_bob

request monitor: GET /metrics
  as bob
expect: 200
  Content-Type: ~ text/plain(;.*)?
  body: {any}# TYPE {any}

request customer-again: like customer
expect: 403
  problem: forbidden
