# A completed answer is kept a whole TTL from when its write commits, not
# from when the handler last read the clock: a write that waited must not
# store an answer already partly expired.  Here every group commit's
# leader holds the write lock for 20 s (the clock jumps as it gets it):
# the claim commits at +20 s, the provider's ledger at +40 s, where the
# handler reads the clock, and the completion at +60 s.  The answer must
# live until +120 s.  Found by the simulator (tests/sim/regressions):
# the expiry was dated +100 s, a retry of the lost 201 at +110 s found
# the key expired, claimed it afresh under a new provider key, and the
# card was charged a second time.

env IDEM_TTL=60
env IDEM_LEASE=30

request first: POST /payments
  as alice
  Idempotency-Key: "slow-commit-1"
  Content-Type: application/json
  env IDEM_FAULT=store_wait:jump=20000
  env IDEM_TEST_NOW_MS=1796042000000
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed
check: keys=1 completed=1 payments=1 charges=1

request lost-201-retry: like first
  unset IDEM_FAULT
  env IDEM_TEST_NOW_MS=1796042110000
expect: 201
  replay-of: first
check: keys=1 completed=1 payments=1 charges=1
