# Every answer carries Request-Id (as Stripe's API does), the id its log
# line carries, so that a support ticket quoting it finds the line: the
# web server's X-Request-Id when it passed one that can be quoted as it
# is, else one made up for the request ("req_" and 24 hexadecimal digits,
# 96 random bits).  A replay carries its own request's id, not the
# original's: Request-Id is never a stored header (invariant 3 covers the
# stored ones).

request first: POST /payments
  as alice
  Idempotency-Key: "order-rid-5120"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}
  log-line: {any} rid={rid1:req}
  Request-Id: {rid1}

request retry: like first
expect: 201
  replay-of: first
  log-line: {any} rid={rid2:req}
  Request-Id: {rid2}

# The web server's id is echoed.
request given: like first
  X-Request-Id: checkout-7f3a
expect: 201
  replay-of: first
  Request-Id: checkout-7f3a
  log-line: {any} rid=checkout-7f3a

# One that cannot be quoted as it is (a space, a quote) is replaced.
request bad-given: like first
  X-Request-Id: a b"c
expect: 201
  replay-of: first
  log-line: {any} rid={rid3:req}
  Request-Id: {rid3}

request no-key: like first
  drop Idempotency-Key
expect: 400
  problem: missing-key
  log-line: {any} rid={rid4:req}
  Request-Id: {rid4}

request not-found: GET /nowhere
  as alice
  X-Request-Id: lost-9
expect: 404
  problem: not-found
  Request-Id: lost-9
  log-line: {any} rid=lost-9

request anonymous: GET /payments/{id}
expect: 401
  problem: unauthorized
  log-line: {any} rid={rid5:req}
  Request-Id: {rid5}

request wrong-method: DELETE /payments
  as alice
expect: 405
  problem: method-not-allowed
  Request-Id: {rid6:req}

request health: GET /healthz
expect: 200
  log-line: {any} rid={rid7:req}
  Request-Id: {rid7}

request health-head: HEAD /healthz
expect: 200
  Request-Id: {rid8:req}

env IDEM_METRICS_ACCOUNT=acct_bob

request metrics: GET /metrics
  as bob
  X-Request-Id: scrape-1
expect: 200
  Request-Id: scrape-1
  log-line: {any} rid=scrape-1

# The JSON log carries the same id.
request json: like first
  env IDEM_LOG=json
expect: 201
  replay-of: first
  Request-Id: {rid9:req}
  log <<END
    {"time": "{any}", "request_id": "{rid9}", "remote": "127.0.0.1",
     "method": "POST", "path": "/payments", "status": 201,
     "outcome": "replay", "account": "acct_alice", "key": "{any}",
     "latency_ms": "{any}"}
  END
check: payments=1 charges=1
