# Every answer carries Request-Id (as Stripe's API does), the id its log
# line carries, so that a support ticket quoting it finds the line: the
# web server's own id when it passed one that can be quoted as it is
# (REQUEST_ID, as the nginx sites pass $request_id, else UNIQUE_ID, as
# Apache's mod_unique_id sets it; no request header becomes either),
# else one made up for the request ("req_" and 24 hexadecimal digits,
# 96 random bits).  A client's X-Request-Id is never it
# (request-id-client).  A replay carries its own request's id, not the
# original's: Request-Id is never a stored header (invariant 3 covers
# the stored ones).

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
  env REQUEST_ID=checkout-7f3a
expect: 201
  replay-of: first
  Request-Id: checkout-7f3a
  log-line: {any} client_request_id=- rid=checkout-7f3a

# Apache's mod_unique_id id, when nothing set REQUEST_ID.
request unique: like first
  env UNIQUE_ID=Z4Qm3Hf0AAEAAB@fSxEAAAAB
expect: 201
  replay-of: first
  Request-Id: Z4Qm3Hf0AAEAAB@fSxEAAAAB
  log-line: {any} rid=Z4Qm3Hf0AAEAAB@fSxEAAAAB

# REQUEST_ID, set by the site, comes first.
request both: like unique
  env REQUEST_ID=site-1
expect: 201
  replay-of: first
  Request-Id: site-1
  log-line: {any} rid=site-1

# One that cannot be quoted as it is (a space, a quote) is replaced.
request bad-given: like first
  env REQUEST_ID=a b"c
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
  env REQUEST_ID=lost-9
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
  env REQUEST_ID=scrape-1
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
    {"time": "{any}", "request_id": "{rid9}", "client_request_id": null,
     "remote": "127.0.0.1",
     "method": "POST", "path": "/payments", "status": 201,
     "outcome": "replay", "account": "acct_alice", "key": "{any}",
     "latency_ms": "{any}"}
  END
check: payments=1 charges=1
