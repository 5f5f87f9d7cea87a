# Refunds: POST /payments/{id}/refunds with an amount answers 201 with
# Location and the refund's JSON; a retry is a faithful replay (invariant
# 3); one provider refund; GET /payments/{id} shows amount_refunded while
# the payment's own replay stays byte-identical.

request pay: POST /payments
  as alice
  Idempotency-Key: "pay-r1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request refund: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "refund-1"
  Content-Type: application/json
  body: {"amount": 10.00}
expect: 201
  no Idempotent-Replayed
  Location: /payments/{id}/refunds/{rid}
  ETag: "{etag:hex16}"
  body: {"id":"{rid}","payment":"{id}","amount":10.00,"currency":"BRL","status":"succeeded","created_at":"{created:time}"}
check: keys=2 completed=2 refunds=1 provider_refunds=1 charges=1

request retry: like refund
expect: 201
  replay-of: refund
check: refunds=1 provider_refunds=1

request payment-replay: like pay
expect: 201
  replay-of: pay

request get: GET /payments/{id}
  as alice
expect: 200
  json: {"id":"{id}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{any}","created_at":"{any}","amount_refunded":10.00}
