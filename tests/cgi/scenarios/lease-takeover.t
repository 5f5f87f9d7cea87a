# Contract rows "original still running, lease valid" and "original died and
# its lease ran out", with the injectable clock (IDEM_TEST_NOW_MS, ms since
# the epoch).  The first invocation dies right after claiming the key
# (fault point after_claim:kill).  A retry inside the 10 s lease is 409 with
# Retry-After: the typical run time still to go, at least 1 and never past
# the lease; no run has been measured in this store, so 1.  A retry after
# the lease takes the claim over and completes with exactly one charge.

env IDEM_LEASE=10

request first: POST /payments
  as alice
  Idempotency-Key: "lease-1"
  Content-Type: application/json
  env IDEM_FAULT=after_claim:kill
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: killed
check: keys=1 in_progress=1 completed=0 payments=0 charges=0

request same-time: like first
  unset IDEM_FAULT
expect: 409
  problem: request-in-progress
  Retry-After: 1
  no Idempotent-Replayed

request later: like same-time
  env IDEM_TEST_NOW_MS=1796042100789
expect: 409
  problem: request-in-progress
  Retry-After: 1

# 0.5 s left on the lease.
request almost: like same-time
  env IDEM_TEST_NOW_MS=1796042106289
expect: 409
  problem: request-in-progress
  Retry-After: 1
check: in_progress=1 payments=0 charges=0

request takeover: like same-time
  env IDEM_TEST_NOW_MS=1796042106790
expect: 201
  no Idempotent-Replayed
  Location: /payments/{id}
check: keys=1 in_progress=0 completed=1 payments=1 charges=1

request retry: like takeover
expect: 201
  replay-of: takeover
check: payments=1 charges=1
