# Invariant 2 (durable before visible): the process dies after the response
# was stored and before it was written.  The retry is the stored 201, a
# replay, and nothing is charged again.

request first: POST /payments
  as alice
  Idempotency-Key: "crash-3"
  Content-Type: application/json
  env IDEM_FAULT=after_complete:kill
  body: {"amount": 100.00, "currency": "BRL"}
expect: killed
check: in_progress=0 completed=1 payments=1 charges=1

request retry: like first
  unset IDEM_FAULT
expect: 201
  Idempotent-Replayed: true
  Location: /payments/{id}
  body: {"id":"{id}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{charge:ch}","created_at":"{created:time}"}

request again: like retry
expect: 201
  replay-of: retry
check: payments=1 charges=1
