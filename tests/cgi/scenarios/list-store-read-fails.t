# Invariant 9, GET /payments: the list is read from the account's index,
# then each payment's row.  When a row cannot be read (fault point
# store_get.payments: that table's reads fail, as an I/O error would), the
# answer is a 503, never a 200 whose page silently lacks the payment (an
# empty "data" with "has_more": false would say the account has none).
# The same for a refunded payment's total (store_get.refund_totals), which
# GET /payments/{id} answers with a 503 too.

request p1: POST /payments
  as alice
  Idempotency-Key: "lsr-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request refund: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "lsr-r1"
  Content-Type: application/json
  body: {"amount": 10.00}
expect: 201

request list: GET /payments
  as alice
expect: 200
  json: {"data":[{"id":"{id}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{any}","created_at":"{any}","amount_refunded":10.00}],"has_more":false}

request rows-fail: like list
  env IDEM_FAULT=store_get.payments:fail
expect: 503
  problem: store-unavailable
  Retry-After: ~ [1-9][0-9]*

request totals-fail: like list
  env IDEM_FAULT=store_get.refund_totals:fail
expect: 503
  problem: store-unavailable
  Retry-After: ~ [1-9][0-9]*

request get-totals-fail: GET /payments/{id}
  as alice
  env IDEM_FAULT=store_get.refund_totals:fail
expect: 503
  problem: store-unavailable

request index-fails: like list
  env IDEM_FAULT=store_scan:fail
expect: 503
  problem: store-unavailable

request again: like list
expect: 200
  json: {"data":[{"id":"{id}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{any}","created_at":"{any}","amount_refunded":10.00}],"has_more":false}
