# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  "Bearer" with no token.

request hostile: POST /payments
  Idempotency-Key: "h-auth-bearer-no-token"
  Content-Type: application/json
  Authorization: Bearer
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
