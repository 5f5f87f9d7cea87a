# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  Two Authorization lines joined by the
# server (alice's and bob's keys): not one credential, 401.

request hostile: POST /payments
  Idempotency-Key: "h-auth-bearer-joined"
  Content-Type: application/json
  Authorization: Bearer {secret:alice}, Bearer {secret:bob}
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
