# An Authorization field that is not a Bearer token is 401; the challenge
# may carry an error attribute (RFC 6750 3.1).

request basic: POST /payments
  Authorization: Basic YWxpY2U6c2VjcmV0
  Idempotency-Key: "auth-3"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem"(, error="[a-z_]+")?

request empty-token: like basic
  Authorization: Bearer
expect: 401
  problem: unauthorized
check: keys=0 payments=0 charges=0
