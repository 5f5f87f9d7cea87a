# Fingerprint exclusions on POST /payments/{id}/refunds: "client_timestamp"
# and "trace_id" do not count; the amount does.  A stored problem (a
# refund past the payment, 400) replays to a retry that differs only in
# them.

request pay: POST /payments
  as alice
  Idempotency-Key: "pay-fx"
  Content-Type: application/json
  body: {"amount": 50.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request refund: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "refund-fx"
  Content-Type: application/json
  body: {"amount": 5.00, "trace_id": "t-1"}
expect: 201

request retry: like refund
  body: {"client_timestamp": "2026-12-02T11:00:00Z", "amount": 5.00}
expect: 201
  replay-of: refund

request other-amount: like refund
  body: {"amount": 6.00, "trace_id": "t-1"}
expect: 422
  problem: key-reused
check: refunds=1 provider_refunds=1

request too-much: like refund
  Idempotency-Key: "refund-fx2"
  body: {"amount": 500.00, "trace_id": "t-2"}
expect: 400
  problem: refund-exceeds-payment

request too-much-retry: like too-much
  body: {"amount": 500.00, "trace_id": "t-3"}
expect: 400
  replay-of: too-much

request unknown: like refund
  Idempotency-Key: "refund-fx3"
  body: {"amount": 1.00, "reason": "x"}
expect: 400
  problem: invalid-refund
check: refunds=1 provider_refunds=1
