# Check order: authentication before the body.  No principal and a body over
# the limit is 401, not 413; no principal and a lying Content-Length is 401.

env IDEM_BODY_LIMIT=1024

request big: POST /payments
  Idempotency-Key: "ord-3"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
  pad-body-to: 4096
expect: 401
  problem: unauthorized
  WWW-Authenticate: Bearer realm="idem"

request lying: like big
  Content-Length: 5000
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
check: keys=0 payments=0 charges=0
