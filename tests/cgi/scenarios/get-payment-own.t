# GET /payments/{id} answers the caller's payment: 200 with the same JSON as
# the 201 body.

request create: POST /payments
  as alice
  Idempotency-Key: "get-1"
  Content-Type: application/json
  body: {"amount": 42.50, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request get: GET /payments/{id}
  as alice
expect: 200
  Content-Type: application/json
  body-of: create
  no Idempotent-Replayed
