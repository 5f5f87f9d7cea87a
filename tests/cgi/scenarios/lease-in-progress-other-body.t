# A different body under a key that is still in progress is 422 (the
# fingerprint decides before the lease), and it does not disturb the claim.

env IDEM_LEASE=10

request first: POST /payments
  as alice
  Idempotency-Key: "lease-2"
  Content-Type: application/json
  env IDEM_FAULT=after_claim:kill
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: killed

request other: like first
  unset IDEM_FAULT
  body: {"amount": 1.00, "currency": "BRL"}
expect: 422
  problem: key-reused

request same: like first
  unset IDEM_FAULT
expect: 409
  problem: request-in-progress
  Retry-After: 1
check: in_progress=1 payments=0 charges=0
