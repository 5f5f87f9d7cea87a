# Per-account bound (finding: one tenant filled the shared store with
# stored 400s and locked the other out).  With IDEM_KEYS_PER_ACCOUNT=2,
# alice's third new key is a 429 with Retry-After and nothing stored or
# charged; her own keys still replay, and bob is not affected.

env IDEM_KEYS_PER_ACCOUNT=2

request a1: POST /payments
  as alice
  Idempotency-Key: "junk-1"
  Content-Type: application/json
  body: {"amount": -1, "currency": "BRL"}
expect: 400
  problem: invalid-payment

request a2: like a1
  Idempotency-Key: "junk-2"
expect: 400
  problem: invalid-payment
check: keys=2 completed=2 payments=0 charges=0

request a3: like a1
  Idempotency-Key: "junk-3"
expect: 429
  problem: too-many-keys
  Retry-After: in 1..86400
check: keys=2 payments=0 charges=0

request a1-again: like a1
expect: 400
  replay-of: a1

request b1: POST /payments
  as bob
  Idempotency-Key: "junk-1"
  Content-Type: application/json
  body: {"amount": 10.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}
check: keys=3 payments=1 charges=1
