# Refunds, contract row "same key, other request": the key of a refund
# used with another amount, or on another payment's refunds, is a 422
# (the fingerprint covers the path and the body); nothing is refunded.

request pay: POST /payments
  as alice
  Idempotency-Key: "pay-r3"
  Content-Type: application/json
  body: {"amount": 50.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request refund: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "refund-k"
  Content-Type: application/json
  body: {"amount": 5.00}
expect: 201

request other-amount: like refund
  body: {"amount": 6.00}
expect: 422
  problem: key-reused
check: refunds=1 provider_refunds=1
