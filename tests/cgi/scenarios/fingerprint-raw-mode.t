# IDEM_FINGERPRINT=raw hashes the body bytes: the same payload reordered is
# a different request (422), the same bytes replay.

env IDEM_FINGERPRINT=raw

request first: POST /payments
  as alice
  Idempotency-Key: "fp-4"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

request same-bytes: like first
expect: 201
  replay-of: first

request reordered: like first
  body: {"currency": "BRL", "amount": 100.00}
expect: 422
  problem: key-reused
check: keys=1 payments=1 charges=1
