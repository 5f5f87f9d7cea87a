# The provider charged and the completion cannot be stored (fault point
# store_complete:fail, as a full store).  The 503 must not say "nothing
# was recorded": the card was charged.  The claim is kept with its
# recovery point and its lease ended, so the retry resumes at once and
# gets the original charge, never a second one.

request first: POST /payments
  as alice
  Idempotency-Key: "complete-fail-1"
  Content-Type: application/json
  env IDEM_FAULT=store_complete:fail
  body: {"amount": 100.00, "currency": "BRL"}
expect: 503
  problem: store-unavailable
  body: {any}The card was charged, but the payment could not be recorded{any}retry with the same key{any}
check: keys=1 in_progress=1 payments=0 charges=1

request retry: like first
  unset IDEM_FAULT
expect: 201
  no Idempotent-Replayed
  Location: /payments/{id}
check: keys=1 completed=1 payments=1 charges=1
