# Crash safety: the process dies inside the provider call.  Whether or not
# the charge happened, the retry after the lease completes with one charge.

env IDEM_LEASE=10

request first: POST /payments
  as alice
  Idempotency-Key: "crash-2"
  Content-Type: application/json
  env IDEM_FAULT=in_provider:kill
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: killed
check: in_progress=1 payments=0

request takeover: like first
  unset IDEM_FAULT
  env IDEM_TEST_NOW_MS=1796042106790
expect: 201
check: in_progress=0 completed=1 payments=1 charges=1
