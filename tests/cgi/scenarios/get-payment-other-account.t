# Isolation: another account's payment id is 404, exactly like an id that
# does not exist, so ids reveal nothing across scopes.

request create: POST /payments
  as alice
  Idempotency-Key: "get-2"
  Content-Type: application/json
  body: {"amount": 42.50, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request bob: GET /payments/{id}
  as bob
expect: 404
  problem: not-found
  no ETag

request unknown: GET /payments/pay_000000000000000000000000
  as alice
expect: 404
  problem: not-found

request anonymous: GET /payments/{id}
expect: 401
  problem: unauthorized
  WWW-Authenticate: Bearer realm="idem"
