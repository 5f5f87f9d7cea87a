# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  "Bearer" glued to the token (RFC 6750
# section 2.1 wants one or more spaces).

request hostile: POST /payments
  Idempotency-Key: "h-auth-bearer-no-space"
  Content-Type: application/json
  Authorization: Bearer{secret:alice}
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
