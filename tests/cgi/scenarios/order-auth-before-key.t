# Check order: authentication comes first.  No principal and no key is 401,
# not 400; no principal and an invalid key is 401 too.

request nokey: POST /payments
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: Bearer realm="idem"

request badkey: like nokey
  Idempotency-Key: "a", "b"
expect: 401
  problem: unauthorized
check: keys=0 payments=0 charges=0
