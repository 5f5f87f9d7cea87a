# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  Two tokens in one field.

request hostile: POST /payments
  Idempotency-Key: "h-auth-bearer-two-tokens"
  Content-Type: application/json
  Authorization: Bearer {secret:alice} {secret:alice}
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
