# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  A 100,000-character token (over the 1
# KiB bound, so never hashed).

request hostile: POST /payments
  Idempotency-Key: "h-auth-bearer-very-long"
  Content-Type: application/json
  Authorization: Bearer {repeat:100000:A}
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
