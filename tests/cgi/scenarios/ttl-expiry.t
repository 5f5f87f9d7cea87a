# Keys expire IDEM_TTL seconds after their claim.  Before that the key is
# live (another body is 422); after it the key is free, and the same key
# with another body is a new payment with its own charge.

env IDEM_TTL=60

request first: POST /payments
  as alice
  Idempotency-Key: "ttl-1"
  Content-Type: application/json
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id1}

request before: like first
  env IDEM_TEST_NOW_MS=1796042155789
  body: {"amount": 5.00, "currency": "BRL"}
expect: 422
  problem: key-reused

request replay-before: like first
  env IDEM_TEST_NOW_MS=1796042155789
expect: 201
  replay-of: first

request after: like before
  env IDEM_TEST_NOW_MS=1796042157790
expect: 201
  no Idempotent-Replayed
  Location: /payments/{id2}
  body: {"id":"{id2}","amount":5.00,"currency":"BRL","status":"succeeded","charge_id":"{any}","created_at":"2026-11-30T12:35:57.790Z"}
check: payments=2 charges=2
