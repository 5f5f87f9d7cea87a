# Invariant 9, GET /payments/{id}/refunds: the list is read from the
# payment's refund index, then each refund's row.  When a refund's row
# cannot be read (fault point store_get.refunds, as an I/O error would),
# the answer is a 503, never a 200 whose page silently lacks the refund.
# A single refund's GET answers the same 503, not a 404.

request pay: POST /payments
  as alice
  Idempotency-Key: "rlsr-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request refund: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "rlsr-r1"
  Content-Type: application/json
  body: {"amount": 10.00}
expect: 201
  Location: /payments/{id}/refunds/{rid}

request list: GET /payments/{id}/refunds
  as alice
expect: 200
  json: {"data":[{"id":"{rid}","payment":"{id}","amount":10.00,"currency":"BRL","status":"succeeded","created_at":"{any}"}],"has_more":false}

request rows-fail: like list
  env IDEM_FAULT=store_get.refunds:fail
expect: 503
  problem: store-unavailable
  Retry-After: ~ [1-9][0-9]*

request one-fails: GET /payments/{id}/refunds/{rid}
  as alice
  env IDEM_FAULT=store_get.refunds:fail
expect: 503
  problem: store-unavailable

request owner-fails: like list
  env IDEM_FAULT=store_get.payments:fail
expect: 503
  problem: store-unavailable

request again: like list
expect: 200
  json: {"data":[{"id":"{rid}","payment":"{id}","amount":10.00,"currency":"BRL","status":"succeeded","created_at":"{any}"}],"has_more":false}
