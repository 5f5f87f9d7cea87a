# Invariant 1: while the original is held inside the provider call, four
# more identical requests (separate processes, running at the same time)
# all get 409; the original completes alone: one payment, one charge.

gate provider

spawn first: POST /payments
  as alice
  Idempotency-Key: "conc-3"
  Content-Type: application/json
  env IDEM_FAULT=in_provider:wait={gate:provider}
  body: {"amount": 100.00, "currency": "BRL"}

reached provider

spawn d1: like first
  unset IDEM_FAULT
spawn d2: like d1
spawn d3: like d1
spawn d4: like d1

await d1
expect: 409
  problem: request-in-progress
  Retry-After: in 1..30
await d2
expect: 409
  problem: request-in-progress
await d3
expect: 409
  problem: request-in-progress
await d4
expect: 409
  problem: request-in-progress

release provider
await first
expect: 201
  no Idempotent-Replayed
check: keys=1 completed=1 in_progress=0 payments=1 charges=1
