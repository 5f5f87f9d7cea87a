# Invariant 1 with a real race, no fault point: six identical requests
# started together (the provider takes 100 ms, so they overlap).  Whatever
# order the processes run in, each answer is the 201, its replay, or 409,
# and the provider is charged exactly once (a get-then-set claim would
# charge several times).

env IDEM_PROVIDER_LATENCY_MS=100

spawn r1: POST /payments
  as alice
  Idempotency-Key: "race-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
spawn r2: like r1
spawn r3: like r1
spawn r4: like r1
spawn r5: like r1
spawn r6: like r1

await r1
expect: 201|409
await r2
expect: 201|409
await r3
expect: 201|409
await r4
expect: 201|409
await r5
expect: 201|409
await r6
expect: 201|409
check: keys=1 completed=1 in_progress=0 payments=1 charges=1
