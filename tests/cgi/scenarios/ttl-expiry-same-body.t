# After its TTL a key is forgotten: the same key and the same body is a new
# operation (the client reused a key a day later), so a new payment with a
# new charge.  A payment must never claim "succeeded" on a charge that was
# made for another payment.

env IDEM_TTL=60

request first: POST /payments
  as alice
  Idempotency-Key: "ttl-2"
  Content-Type: application/json
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  body: {"id":"{id1:pay}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{c1:ch}","created_at":"{any}"}

request after: like first
  env IDEM_TEST_NOW_MS=1796042157790
expect: 201
  no Idempotent-Replayed
  body: {"id":"{id2:pay}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{c2:ch}","created_at":"2026-11-30T12:35:57.790Z"}
check: payments=2 charges=2
