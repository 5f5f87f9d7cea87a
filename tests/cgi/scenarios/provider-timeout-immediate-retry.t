# After a provider timeout (504) the original is no longer running: the claim
# is kept with its recovery point (a charge may have been made), and a retry
# right away, same key, failure mode off, resumes it.  The provider
# deduplicates on the derived key, so the answer is 201 with exactly one
# charge, the original one.

request first: POST /payments
  as alice
  Idempotency-Key: "to-2"
  Content-Type: application/json
  env IDEM_PROVIDER_FAIL=timeout
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: 504
  problem: provider-timeout
  no Location
check: in_progress=1 completed=0 payments=0 charges=1

request soon: like first
  unset IDEM_PROVIDER_FAIL
  env IDEM_TEST_NOW_MS=1796042097789
expect: 201
  no Idempotent-Replayed
  Location: /payments/{id}
check: in_progress=0 completed=1 payments=1 charges=1

request again: like soon
expect: 201
  replay-of: soon
check: payments=1 charges=1
