# Sealing a store that was written in the clear: with a key file, a row
# stored in the clear does not open (500, never the bytes as they are);
# idemctl rekey without -P leaves it and says so; idemctl rekey -P seals
# it, and it reads again.

unset IDEM_SECRET_FILE
request p1: POST /payments
  as alice
  Idempotency-Key: "plain-1"
  Content-Type: application/json
  body: {"amount": 10.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

env IDEM_SECRET_FILE={tmp}/secret
request get: GET /payments/{id}
  as alice
expect: 500
  problem: internal-error

ctl: rekey
  exit: 1
  prints: rows resealed: 0
  prints: rows that did not open: 2

ctl: rekey -P
  prints: rows resealed: 2
  prints: records under older keys: 1

request get-again: GET /payments/{id}
  as alice
expect: 200
  json: {"id":"{id}","amount":10.00,"currency":"BRL","status":"succeeded","charge_id":"{any}","created_at":"{any}"}
