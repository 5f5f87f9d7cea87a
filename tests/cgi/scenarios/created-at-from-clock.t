# The 201 body, byte for byte, with the injectable clock (test builds):
# created_at is the request's time in UTC with milliseconds, the amount keeps
# the currency's two digits however the client wrote it.

request first: POST /payments
  as alice
  Idempotency-Key: "clock-1"
  Content-Type: application/json
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 1e2, "currency": "BRL"}
expect: 201
  body: {"id":"{id:pay}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{charge:ch}","created_at":"2026-11-30T12:34:56.789Z"}

request small: POST /payments
  like first
  Idempotency-Key: "clock-2"
  body: {"amount": 0.5, "currency": "BRL"}
expect: 201
  body: {"id":"{id2:pay}","amount":0.50,"currency":"BRL","status":"succeeded","charge_id":"{charge2:ch}","created_at":"2026-11-30T12:34:56.789Z"}
check: payments=2 charges=2
