# Normalised numbers: 100.00, 100, 100.0 and 1e2 are the same amount, so the
# same request under the canonical fingerprint.

request first: POST /payments
  as alice
  Idempotency-Key: "fp-2"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

request integer: like first
  body: {"amount": 100, "currency": "BRL"}
expect: 201
  replay-of: first

request one-digit: like first
  body: {"amount": 100.0, "currency": "BRL"}
expect: 201
  replay-of: first

request exponent: like first
  body: {"amount": 1e2, "currency": "BRL"}
expect: 201
  replay-of: first

# But another amount is another request.
request other: like first
  body: {"amount": 100.01, "currency": "BRL"}
expect: 422
  problem: key-reused
check: keys=1 payments=1 charges=1
