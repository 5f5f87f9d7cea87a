# RFC 9457 "instance": every problem names the request it is about, its
# Request-Id (percent-encoded where the id is not a URI reference as it
# is): the web server's own id (REQUEST_ID) where one is passed.  A
# problem stored with a key's answer (a 402 decline, a 400 amount)
# replays byte for byte and so keeps the first request's instance, the
# occurrence it describes, whose log line has that rid; the replay's
# Request-Id header is its own.  Problems not stored (409, 422, missing
# key, 401, 404) name the current request.

request declined: POST /payments
  as alice
  Idempotency-Key: "inst-1"
  Content-Type: application/json
  env IDEM_PROVIDER_FAIL=decline
  body: {"amount": 100.00, "currency": "BRL"}
expect: 402
  problem: payment-declined
  Request-Id: {rid1:req}
  log-line: {any} rid={rid1}
  json: {"type": "/problems/payment-declined.html", "title": "{any}", "status": 402, "detail": "{any}", "instance": "{rid1}"}

request declined-retry: like declined
  unset IDEM_PROVIDER_FAIL
expect: 402
  replay-of: declined
  Request-Id: {rid2:req}
  log-line: {any} rid={rid2}
  json: {"type": "/problems/payment-declined.html", "title": "{any}", "status": 402, "detail": "{any}", "instance": "{rid1}"}

request bad-amount: like declined
  Idempotency-Key: "inst-2"
  unset IDEM_PROVIDER_FAIL
  env REQUEST_ID=shop-17
  body: {"amount": 1.001, "currency": "BRL"}
expect: 400
  problem: invalid-payment
  Request-Id: shop-17
  json: {"type": "/problems/invalid-payment.html", "title": "{any}", "status": 400, "detail": "{any}", "instance": "shop-17"}

request bad-amount-retry: like bad-amount
  env REQUEST_ID=shop-18
expect: 400
  replay-of: bad-amount
  Request-Id: shop-18
  json: {"type": "/problems/invalid-payment.html", "title": "{any}", "status": 400, "detail": "{any}", "instance": "shop-17"}

# Not stored: the current request's id.
request reused: like bad-amount
  env REQUEST_ID=shop-19
  body: {"amount": 2.00, "currency": "BRL"}
expect: 422
  problem: key-reused
  Request-Id: shop-19
  json: {"type": "/problems/key-reused.html", "title": "{any}", "status": 422, "detail": "{any}", "instance": "shop-19"}

request no-key: like declined
  drop Idempotency-Key
  unset IDEM_PROVIDER_FAIL
expect: 400
  problem: missing-key
  Request-Id: {rid3:req}
  json: {"type": "/problems/missing-key.html", "title": "{any}", "status": 400, "detail": "{any}", "instance": "{rid3}"}

request anonymous: GET /payments
expect: 401
  problem: unauthorized
  Request-Id: {rid4:req}
  json: {"type": "/problems/unauthorized.html", "title": "{any}", "status": 401, "detail": "{any}", "instance": "{rid4}"}

# An id that is not a URI reference as it is: percent-encoded.
request encoded: GET /nowhere
  as alice
  env REQUEST_ID=a/b:c%d?e#f
expect: 404
  problem: not-found
  Request-Id: a/b:c%d?e#f
  json: {"type": "/problems/not-found.html", "title": "{any}", "status": 404, "detail": "{any}", "instance": "a%2Fb%3Ac%25d%3Fe%23f"}

# IDEM_PROBLEM_BASE makes type absolute; instance is unchanged.
env IDEM_PROBLEM_BASE=https://docs.example.com/problems/

request absolute: GET /nowhere
  as alice
  env REQUEST_ID=lost-1
expect: 404
  Content-Type: application/problem+json
  json: {"type": "https://docs.example.com/problems/not-found.html", "title": "{any}", "status": 404, "detail": "{any}", "instance": "lost-1"}
check: keys=2 payments=0 charges=0 declines=1
