# Contract row "handler answered 5xx ... kept for takeover": the provider
# charged but its answer was lost (IDEM_PROVIDER_FAIL=timeout).  504; a side
# effect may have happened, so the claim is kept, not released.  The retry
# after the lease takes over, the provider deduplicates on the derived key,
# and the payment completes with exactly one charge: the original one.

env IDEM_LEASE=30

request first: POST /payments
  as alice
  Idempotency-Key: "to-1"
  Content-Type: application/json
  env IDEM_PROVIDER_FAIL=timeout
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: 504
  problem: provider-timeout
  no Idempotent-Replayed
check: payments=0 charges=1 completed=0

# After the lease (30 s later by the injectable clock), failure mode off.
request retry: like first
  unset IDEM_PROVIDER_FAIL
  env IDEM_TEST_NOW_MS=1796042126790
expect: 201
  no Idempotent-Replayed
  Location: /payments/{id}
check: keys=1 completed=1 in_progress=0 payments=1 charges=1

request again: like retry
expect: 201
  replay-of: retry
check: payments=1 charges=1
