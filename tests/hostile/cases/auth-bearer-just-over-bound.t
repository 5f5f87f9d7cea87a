# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  A 1,025-character token, one over the
# bound.

request hostile: POST /payments
  Idempotency-Key: "h-auth-bearer-just-over-bound"
  Content-Type: application/json
  Authorization: Bearer {repeat:1025:A}
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
