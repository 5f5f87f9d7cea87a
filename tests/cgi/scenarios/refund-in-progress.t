# Refunds, invariant 1 without sleeps: a duplicate of a refund that is
# inside the provider call gets 409 with Retry-After; the first completes
# and the third is a replay; one provider refund.

request pay: POST /payments
  as alice
  Idempotency-Key: "pay-r4"
  Content-Type: application/json
  body: {"amount": 50.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

gate provider

spawn first: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "refund-409"
  Content-Type: application/json
  env IDEM_FAULT=in_provider:wait={gate:provider}
  body: {"amount": 20.00}

reached provider

request dup: like first
  unset IDEM_FAULT
expect: 409
  problem: request-in-progress
  Retry-After: in 1..30
check: in_progress=1 refunds=0 provider_refunds=0

release provider
await first
expect: 201
  no Idempotent-Replayed

request third: like dup
expect: 201
  replay-of: first
check: in_progress=0 refunds=1 provider_refunds=1
