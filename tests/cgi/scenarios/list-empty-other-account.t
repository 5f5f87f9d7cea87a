# An account with no payments gets an empty list, not another's.

request create: POST /payments
  as alice
  Idempotency-Key: "list-e"
  Content-Type: application/json
  body: {"amount": 1.00, "currency": "BRL"}
expect: 201

request bob: GET /payments
  as bob
expect: 200
  Content-Type: application/json
  json: {"data": [], "has_more": false}

request anonymous: GET /payments
expect: 401
  problem: unauthorized
