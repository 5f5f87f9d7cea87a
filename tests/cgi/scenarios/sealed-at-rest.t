# Stored responses, recovery points and rows are sealed at rest under
# IDEM_SECRET_FILE (XChaCha20-Poly1305): after two payments and a refund,
# no file of the store holds an amount, a currency, a payment or refund
# id, a payment's or a refund's JSON, a Location, a charge id or a time,
# while GET, the lists and every replay still answer the bytes that were
# answered (rows named by an id are stored under its digest: rowkey.h).
# store: the same on PostgreSQL (its database dump is searched)

request p1: POST /payments
  as alice
  Idempotency-Key: "sealed-1"
  Content-Type: application/json
  body: {"amount": 4321.98, "currency": "BRL"}
expect: 201
  Location: /payments/{id}
  body: {"id":"{id}","amount":4321.98,"currency":"BRL","status":"succeeded","charge_id":"{charge:ch}","created_at":"{created:time}"}

request p2: POST /payments
  as alice
  Idempotency-Key: "sealed-2"
  Content-Type: application/json
  body: {"amount": 8765.43, "currency": "USD"}
expect: 201
  Location: /payments/{id2}

request r1: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "sealed-r1"
  Content-Type: application/json
  body: {"amount": 1234.56}
expect: 201
  Location: /payments/{id}/refunds/{rid}
check: keys=3 completed=3 payments=2 refunds=1

request p1-again: like p1
expect: 201
  replay-of: p1
request r1-again: like r1
expect: 201
  replay-of: r1

request get: GET /payments/{id}
  as alice
expect: 200
  json: {"id":"{id}","amount":4321.98,"currency":"BRL","status":"succeeded","charge_id":"{charge}","created_at":"{created}","amount_refunded":1234.56}

request list: GET /payments
  as alice
expect: 200
  json: {"data":[{"id":"{id2}","amount":8765.43,"currency":"USD","status":"succeeded","charge_id":"{any}","created_at":"{any}"},{"id":"{id}","amount":4321.98,"currency":"BRL","status":"succeeded","charge_id":"{charge}","created_at":"{created}","amount_refunded":1234.56}],"has_more":false}

request refund: GET /payments/{id}/refunds/{rid}
  as alice
expect: 200
  json: {"id":"{rid}","payment":"{id}","amount":1234.56,"currency":"BRL","status":"succeeded","created_at":"{any}"}

request refunds: GET /payments/{id}/refunds
  as alice
expect: 200
  json: {"data":[{"id":"{rid}","payment":"{id}","amount":1234.56,"currency":"BRL","status":"succeeded","created_at":"{any}"}],"has_more":false}

db-lacks: 4321.98
db-lacks: 432198
db-lacks: 8765.43
db-lacks: 1234.56
db-lacks: BRL
db-lacks: USD
db-lacks: {id}
db-lacks: {id2}
db-lacks: {rid}
db-lacks: "id":"{id}"
db-lacks: /payments/{id}
db-lacks: "id":"{rid}"
db-lacks: {charge}
db-lacks: {created}
db-lacks: succeeded
db-lacks: application/json
