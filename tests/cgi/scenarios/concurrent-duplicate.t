# Invariant 1 without sleeps: a duplicate that arrives while the original is
# inside the provider call gets 409 with Retry-After.  The first invocation
# stops at the fault point in_provider, where it opens the gate (a fifo) to
# read; "reached" returns once it is there; "release" closes our end, and the
# responder carries on.

gate provider

spawn first: POST /payments
  as alice
  Idempotency-Key: "conc-1"
  Content-Type: application/json
  env IDEM_FAULT=in_provider:wait={gate:provider}
  body: {"amount": 100.00, "currency": "BRL"}

reached provider

request dup: like first
  unset IDEM_FAULT
expect: 409
  problem: request-in-progress
  Retry-After: in 1..30
  no Location
check: keys=1 in_progress=1 payments=0

release provider
await first
expect: 201
  no Idempotent-Replayed
  Location: /payments/{id}
check: keys=1 in_progress=0 completed=1 payments=1 charges=1

request third: like dup
expect: 201
  replay-of: first
check: payments=1 charges=1
