# Invariant 7: a refund whose amount is null: a stored 400
# invalid-refund, replayed; nothing refunded.

request pay: POST /payments
  as alice
  Idempotency-Key: "pay-h"
  Content-Type: application/json
  body: {"amount": 50.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request hostile: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "h-amount"
  Content-Type: application/json
  body: {"amount": null}
expect: 400
  problem: invalid-refund
  utf8-body

request again: like hostile
expect: 400
  replay-of: hostile
check: refunds=0 provider_refunds=0
