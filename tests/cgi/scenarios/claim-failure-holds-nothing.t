# A payment's recovery point (its id and time) is written in the claim's
# own transaction, so no claim can exist without it: when that write fails
# (fault point store_claim:fail, as on a full store) nothing is held, the
# 503 says nothing was recorded, and the retry runs at once instead of
# meeting 409s for the whole lease.  (Before, a failed separate checkpoint
# left a claim behind that answered 409 for the lease.)

request first: POST /payments
  as alice
  Idempotency-Key: "claim-fail-1"
  Content-Type: application/json
  env IDEM_FAULT=store_claim:fail
  body: {"amount": 100.00, "currency": "BRL"}
expect: 503
  problem: store-unavailable
  Retry-After: 1
check: keys=0 payments=0 charges=0

request retry: like first
  unset IDEM_FAULT
expect: 201
  no Idempotent-Replayed
check: keys=1 completed=1 payments=1 charges=1
