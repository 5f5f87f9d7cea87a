# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  An empty Authorization field.

request hostile: POST /payments
  Idempotency-Key: "h-auth-empty"
  Content-Type: application/json
  Authorization: 
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
