# Contract row "same scope and key, completed": the first POST is charged
# once and answered 201; the retry with the same key and body is the stored
# answer, byte for byte, plus Idempotent-Replayed: true, and no new charge.

request first: POST /payments
  as alice
  Idempotency-Key: "order-1001"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Content-Type: application/json
  Location: /payments/{id}
  ETag: "{etag:hex16}"
  Cache-Control: no-store
  no Idempotent-Replayed
  body: {"id":"{id:pay}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{charge:ch}","created_at":"{created:time}"}
check: keys=1 completed=1 in_progress=0 payments=1 charges=1

request retry: like first
expect: 201
  replay-of: first
  Location: /payments/{id}
  ETag: "{etag}"
  Idempotent-Replayed: true

# A third time is still the same answer, and still one charge.
request third: like first
expect: 201
  replay-of: first
check: keys=1 completed=1 payments=1 charges=1
