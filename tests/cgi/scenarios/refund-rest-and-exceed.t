# Refunds never exceed the payment: an amount omitted refunds all that is
# left; a refund past what is left is a stored 400 (refund-exceeds-payment)
# replayed to its retries; GET lists the refunds newest first and reads
# one; GET /payments/{id} shows the refunded total.

request pay: POST /payments
  as alice
  Idempotency-Key: "pay-r2"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request first: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "refund-a"
  Content-Type: application/json
  body: {"amount": 30.00}
expect: 201
  Location: /payments/{id}/refunds/{first}

request rest: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "refund-b"
  Content-Type: application/json
  body: {}
expect: 201
  Location: /payments/{id}/refunds/{second}
  json: {"id":"{second}","payment":"{id}","amount":70.00,"currency":"BRL","status":"succeeded","created_at":"{any}"}
check: refunds=2 provider_refunds=2

request over: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "refund-c"
  Content-Type: application/json
  body: {"amount": 0.01}
expect: 400
  problem: refund-exceeds-payment
check: keys=4 completed=4 in_progress=0 refunds=2 provider_refunds=2

request over-retry: like over
expect: 400
  replay-of: over

request nothing-left: like over
  Idempotency-Key: "refund-d"
  body: {}
expect: 400
  problem: refund-exceeds-payment

request list: GET /payments/{id}/refunds
  as alice
expect: 200
  json: {"data":[{"id":"{second}","payment":"{id}","amount":70.00,"currency":"BRL","status":"succeeded","created_at":"{any}"},{"id":"{first}","payment":"{id}","amount":30.00,"currency":"BRL","status":"succeeded","created_at":"{any}"}],"has_more":false}

request page: GET /payments/{id}/refunds?limit=1
  as alice
expect: 200
  json: {"data":[{"id":"{second}","payment":"{id}","amount":70.00,"currency":"BRL","status":"succeeded","created_at":"{any}"}],"has_more":true}

request page2: GET /payments/{id}/refunds?limit=1&starting_after={second}
  as alice
expect: 200
  json: {"data":[{"id":"{first}","payment":"{id}","amount":30.00,"currency":"BRL","status":"succeeded","created_at":"{any}"}],"has_more":false}

request unknown: GET /payments/{id}/refunds?after={second}
  as alice
expect: 400
  problem: bad-request
  json: {"type": "{any}", "title": "{any}", "status": 400, "detail": "Unknown query parameter: after. This list takes limit, starting_after and ending_before.", "instance": "{any}"}

request one: GET /payments/{id}/refunds/{first}
  as alice
expect: 200
  ETag: "{retag:hex16}"
  json: {"id":"{first}","payment":"{id}","amount":30.00,"currency":"BRL","status":"succeeded","created_at":"{any}"}

request get: GET /payments/{id}
  as alice
expect: 200
  json: {"id":"{id}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{any}","created_at":"{any}","amount_refunded":100.00}

request bad-limit: GET /payments/{id}/refunds?limit=0
  as alice
expect: 400
  problem: bad-request

request no-refund: GET /payments/{id}/refunds/re_000000000000000000000000
  as alice
expect: 404
  problem: not-found
