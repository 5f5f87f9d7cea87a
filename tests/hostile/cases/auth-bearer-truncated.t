# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  alice's key less its last character.

request hostile: POST /payments
  Idempotency-Key: "h-auth-bearer-truncated"
  Content-Type: application/json
  Authorization: Bearer sk_test_alice_4f1b2b0b822cd15
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
