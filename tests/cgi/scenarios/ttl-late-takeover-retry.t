# Invariant 5 across the TTL (finding: a late double charge).  TTL 60 s,
# lease 10 s.  The provider charges but its answer is lost (504, one
# charge).  A retry at t=120 s, long after the TTL, takes the claim over
# (a claim past stage 0 never expires) and gets the original charge.  Its
# 201 is lost too, and the retry at t=121 s must replay it: completion
# moved the key's expiry to a TTL from then.  Before, that record counted
# as expired, the key was claimed afresh under a new provider key, and
# the card was charged a second time.

env IDEM_TTL=60
env IDEM_LEASE=10

request first: POST /payments
  as alice
  Idempotency-Key: "late-1"
  Content-Type: application/json
  env IDEM_PROVIDER_FAIL=timeout
  env IDEM_TEST_NOW_MS=1796042000000
  body: {"amount": 100.00, "currency": "BRL"}
expect: 504
  problem: provider-timeout
check: keys=1 in_progress=1 payments=0 charges=1

request takeover: like first
  unset IDEM_PROVIDER_FAIL
  env IDEM_TEST_NOW_MS=1796042120000
expect: 201
  no Idempotent-Replayed
  Location: /payments/{id}
check: keys=1 completed=1 payments=1 charges=1

request lost-201-retry: like takeover
  env IDEM_TEST_NOW_MS=1796042121000
expect: 201
  replay-of: takeover
check: keys=1 completed=1 payments=1 charges=1

# Still there a whole TTL after the completion, gone after it.
request end-of-ttl: like takeover
  env IDEM_TEST_NOW_MS=1796042179999
expect: 201
  replay-of: takeover
check: payments=1 charges=1
