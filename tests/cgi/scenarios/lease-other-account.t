# Isolation: alice's key stuck in progress does not block bob's same key.

env IDEM_LEASE=10

request alice: POST /payments
  as alice
  Idempotency-Key: "lease-3"
  Content-Type: application/json
  env IDEM_FAULT=after_claim:kill
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: killed

request bob: like alice
  unset IDEM_FAULT
  as bob
expect: 201
  no Idempotent-Replayed
check: in_progress=1 completed=1 payments=1 charges=1
