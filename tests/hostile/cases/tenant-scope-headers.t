# Invariant 4, isolation: scope comes from the credential, never from a
# header: alice's key with headers naming bob's account makes alice's
# payment, which bob cannot see.

request alice: POST /payments
  as alice
  Idempotency-Key: "h-tenant-headers"
  Content-Type: application/json
  X-Account: acct_bob
  Remote-User: acct_bob
  X-Remote-User: acct_bob
  X-Forwarded-User: acct_bob
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request bob: GET /payments/{id}
  as bob
expect: 404
  problem: not-found

request bob-list: GET /payments
  as bob
expect: 200
  json: {"data": [], "has_more": false}

request alice-get: GET /payments/{id}
  as alice
expect: 200
  body-of: alice
check: keys=1 payments=1 charges=1
