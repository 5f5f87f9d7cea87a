# Invariant 7: a refund of the largest amount accepted on a small payment:
# the stored 400 refund-exceeds-payment, no overflow in the totals.

request pay: POST /payments
  as alice
  Idempotency-Key: "pay-h"
  Content-Type: application/json
  body: {"amount": 50.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request hostile: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "h-max"
  Content-Type: application/json
  body: {"amount": 1000000000000.00}
expect: 400
  problem: refund-exceeds-payment
check: refunds=0 provider_refunds=0
