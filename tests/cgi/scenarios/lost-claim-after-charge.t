# Invariant 10 (a lost row never charges twice): the process dies after
# the provider charged, and the claim's record is then lost, as a failover
# that lost commits or a restore from a backup loses it.  The client's
# retry finds no record and claims afresh, but its provider key is derived
# from what every retry carries (scope, key, fingerprint, and the key's
# generation, which the lost record did not hold), so the provider replays
# the original charge: one charge, and the 201 names it.

request first: POST /payments
  as alice
  Idempotency-Key: "lost-1"
  Content-Type: application/json
  env IDEM_FAULT=after_charge:kill
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: killed
check: in_progress=1 payments=0 charges=1

run: tests/cgi/claimctl lose acct_alice lost-1
check: keys=0 in_progress=0 payments=0 charges=1

# The retry re-serialises the body (the same payment, the same
# fingerprint) and comes a while later.
request retry: like first
  unset IDEM_FAULT
  env IDEM_TEST_NOW_MS=1796042156789
  body: {"currency": "BRL", "amount": 100.0}
expect: 201
  no Idempotent-Replayed
  body: {"id":"{id:pay}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{charge:ch}","created_at":"{any}"}
check: completed=1 payments=1 charges=1

request again: like retry
expect: 201
  replay-of: retry
check: payments=1 charges=1

# Another body under the same key is another request: 422, as ever.
request other: like retry
  body: {"amount": 5.00, "currency": "BRL"}
expect: 422
  problem: key-reused
check: charges=1
