# Contract row "handler answered 5xx": the provider refused before doing
# anything, so no side effect can have happened: 502, the claim is released,
# and a retry with the same key (provider back) is a fresh 201, one charge.

request first: POST /payments
  as alice
  Idempotency-Key: "unav-1"
  Content-Type: application/json
  env IDEM_PROVIDER_FAIL=unavailable
  body: {"amount": 100.00, "currency": "BRL"}
expect: 502
  problem: provider-failed
  no Idempotent-Replayed
check: completed=0 in_progress=0 payments=0 charges=0

request retry: like first
  unset IDEM_PROVIDER_FAIL
expect: 201
  no Idempotent-Replayed
  Location: /payments/{id}
check: keys=1 completed=1 in_progress=0 payments=1 charges=1

request again: like retry
expect: 201
  replay-of: retry
