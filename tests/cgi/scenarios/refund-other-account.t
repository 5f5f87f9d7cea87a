# Refunds: another account's payment, or none, is 404, checked before the
# claim and not stored (the key stays unused); the same for its refunds.

request pay: POST /payments
  as alice
  Idempotency-Key: "pay-r6"
  Content-Type: application/json
  body: {"amount": 50.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request alice-refund: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "refund-own"
  Content-Type: application/json
  body: {"amount": 5.00}
expect: 201
  Location: /payments/{id}/refunds/{rid}

request bob: POST /payments/{id}/refunds
  as bob
  Idempotency-Key: "refund-bob"
  Content-Type: application/json
  body: {"amount": 5.00}
expect: 404
  problem: not-found
check: keys=2 refunds=1 provider_refunds=1

request none: POST /payments/pay_000000000000000000000000/refunds
  like bob
  as alice
  Idempotency-Key: "refund-none"
expect: 404
  problem: not-found
check: keys=2

request bob-list: GET /payments/{id}/refunds
  as bob
expect: 404
  problem: not-found

request bob-one: GET /payments/{id}/refunds/{rid}
  as bob
expect: 404
  problem: not-found
