# An upgrade with a payment in flight: a release before key generations
# claimed the key, charged the provider under its own derived key
# (charge:{scope}:{key}:{claim time}) and died.  Its record knows no
# generation; the take-over by this release must derive that release's
# key, so that the provider replays the charge instead of making a second
# one (invariant 5 across the upgrade).

env IDEM_LEASE=10

request first: POST /payments
  as alice
  Idempotency-Key: "upgrade-1"
  Content-Type: application/json
  env IDEM_FAULT=after_claim:kill
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: killed
check: in_progress=1 charges=0

# What the older release left: the same claim without a generation, and
# its charge under its key.
run: tests/cgi/claimctl legacy-charge acct_alice upgrade-1 10000 BRL
  prints: ch_
check: in_progress=1 payments=0 charges=1

request takeover: like first
  unset IDEM_FAULT
  env IDEM_TEST_NOW_MS=1796042106790
expect: 201
  no Idempotent-Replayed
check: completed=1 payments=1 charges=1

request retry: like takeover
expect: 201
  replay-of: takeover
check: payments=1 charges=1
