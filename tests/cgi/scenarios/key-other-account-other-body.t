# Isolation: bob reusing alice's key with another body is a fresh request
# (201), not a 422 that would reveal alice's key exists.

request alice: POST /payments
  as alice
  Idempotency-Key: "iso-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

request bob: like alice
  as bob
  body: {"amount": 3.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed
  body: {"id":"{id:pay}","amount":3.00,"currency":"BRL","status":"succeeded","charge_id":"{any}","created_at":"{any}"}
check: payments=2 charges=2
