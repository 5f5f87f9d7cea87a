# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  alice's key followed by a control
# character (0x01).

request hostile: POST /payments
  Idempotency-Key: "h-auth-bearer-control"
  Content-Type: application/json
  Authorization: Bearer {secret:alice}{byte:01}
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
