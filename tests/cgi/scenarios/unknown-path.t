# A path that is no route is 404 not-found, as problem+json.

request nope: GET /nope
  as alice
expect: 404
  problem: not-found

request deeper: GET /payments/pay_000000000000000000000000/refunds
  as alice
expect: 404
  problem: not-found

request post: POST /charges
  as alice
  Idempotency-Key: "np-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 404
  problem: not-found
check: keys=0 payments=0 charges=0
