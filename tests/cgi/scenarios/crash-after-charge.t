# Invariant 5 (crash safety): the process dies after the provider charged
# and before the payment is stored.  The key stays in progress; the retry
# after the lease resumes, the provider deduplicates on the derived key
# (charge:{scope}:{key}), and the card is charged once.

env IDEM_LEASE=10

request first: POST /payments
  as alice
  Idempotency-Key: "crash-1"
  Content-Type: application/json
  env IDEM_FAULT=after_charge:kill
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: killed
check: in_progress=1 payments=0 charges=1

request inside-lease: like first
  unset IDEM_FAULT
  env IDEM_TEST_NOW_MS=1796042097789
expect: 409
  problem: request-in-progress
  Retry-After: 1

request takeover: like first
  unset IDEM_FAULT
  env IDEM_TEST_NOW_MS=1796042106790
expect: 201
  no Idempotent-Replayed
check: in_progress=0 completed=1 payments=1 charges=1

request retry: like takeover
expect: 201
  replay-of: takeover
check: payments=1 charges=1
