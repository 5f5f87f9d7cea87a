# The connection breaks halfway through the 201 (fault point mid_response):
# the client saw a torn answer, retries, and gets the whole stored answer.

request first: POST /payments
  as alice
  Idempotency-Key: "crash-4"
  Content-Type: application/json
  env IDEM_FAULT=mid_response:kill
  body: {"amount": 100.00, "currency": "BRL"}
expect: killed
check: completed=1 payments=1 charges=1

request retry: like first
  unset IDEM_FAULT
expect: 201
  Idempotent-Replayed: true
  body: {"id":"{id:pay}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{charge:ch}","created_at":"{created:time}"}
check: payments=1 charges=1
