# "What peers get wrong": storing the request's headers, bearer token
# included, next to the stored response.  Neither the API secret nor the
# Authorization field may reach the store or the ledger, and the log line
# on stderr carries neither the secret, the raw key nor the body.

request first: POST /payments
  as alice
  Idempotency-Key: "very-secret-idempotency-key-4711"
  Content-Type: application/json
  body: {"amount": 123.45, "currency": "BRL"}
expect: 201
  stderr-lacks: {secret:alice}
  stderr-lacks: very-secret-idempotency-key-4711
  stderr-lacks: 123.45

request retry: like first
expect: 201
  replay-of: first
  stderr-lacks: {secret:alice}
  stderr-lacks: very-secret-idempotency-key-4711
store-lacks: {secret:alice}
store-lacks: Bearer
