# Invariant 4, isolation: in the default mode REMOTE_USER is not a
# credential, so a REMOTE_USER naming bob beside alice's API key does not
# move alice's payment into bob's scope: the payment is alice's, and bob
# cannot see it.

request alice: POST /payments
  as alice
  Idempotency-Key: "h-tenant-ru"
  Content-Type: application/json
  env REMOTE_USER=acct_bob
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request alice-get: GET /payments/{id}
  as alice
expect: 200
  body-of: alice

request bob-get: GET /payments/{id}
  as bob
expect: 404
  problem: not-found
check: keys=1 payments=1 charges=1
