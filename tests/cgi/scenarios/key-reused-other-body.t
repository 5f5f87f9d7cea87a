# Contract row "same scope and key, different fingerprint": 422, nothing
# stored, the handler does not run; the original answer is untouched.

request first: POST /payments
  as alice
  Idempotency-Key: "order-2002"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request other: like first
  body: {"amount": 250.00, "currency": "BRL"}
expect: 422
  problem: key-reused
  no Idempotent-Replayed
  no Location
check: keys=1 completed=1 payments=1 charges=1

# The original request still replays.
request retry: like first
expect: 201
  replay-of: first
check: payments=1 charges=1
