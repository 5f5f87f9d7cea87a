# Invariant 9, the reads behind GET /payments/{id} and POST: a read that
# fails (fault points store_get and store_lookup, as an I/O error would) is
# a 503 with Retry-After, never a 404 for a payment that exists, never a
# fresh claim of a key that is stored, and never a 201 or a replay.

request first: POST /payments
  as alice
  Idempotency-Key: "gsr-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request get-fails: GET /payments/{id}
  as alice
  env IDEM_FAULT=store_get:fail
expect: 503
  problem: store-unavailable
  Retry-After: ~ [1-9][0-9]*

request replay-fails: like first
  env IDEM_FAULT=store_lookup:fail
expect: 503
  problem: store-unavailable
  no Idempotent-Replayed
check: keys=1 completed=1 payments=1 charges=1

request refund-fails: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "gsr-r1"
  Content-Type: application/json
  env IDEM_FAULT=store_get.payments:fail
  body: {"amount": 10.00}
expect: 503
  problem: store-unavailable
check: keys=1 refunds=0 provider_refunds=0

request get: GET /payments/{id}
  as alice
expect: 200

request replay: like first
expect: 201
  replay-of: first
