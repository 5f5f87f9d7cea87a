# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, no charge.

request first: POST /payments
  Idempotency-Key: "auth-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: Bearer realm="idem"
check: keys=0 payments=0 charges=0

# The same key, once authenticated, is a fresh request.
request authed: like first
  as alice
expect: 201
  no Idempotent-Replayed
check: keys=1 payments=1 charges=1
