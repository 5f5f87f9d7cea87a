# A claim whose recovery point cannot be written never reached the
# provider: the answer is a 503 that says nothing was charged, and the
# claim is released, so the retry runs at once instead of meeting 409s
# for the whole lease (fault point store_checkpoint:fail, as a full store).

request first: POST /payments
  as alice
  Idempotency-Key: "cp-fail-1"
  Content-Type: application/json
  env IDEM_FAULT=store_checkpoint:fail
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
