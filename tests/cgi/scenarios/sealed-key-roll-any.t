# Rolling the sealing key twice, on any store: after each roll idemctl
# rekey rewrites every row and record under the current key, so the key
# before it can leave the file at once; after the second roll only the
# newest key is left, and every replay and GET still answers as before.

request p1: POST /payments
  as alice
  Idempotency-Key: "roll-1"
  Content-Type: application/json
  body: {"amount": 10.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request r1: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "roll-r1"
  Content-Type: application/json
  body: {"amount": 1.00}
expect: 201
  Location: /payments/{id}/refunds/{rid}

secret second
secret roll1 from second secret
env IDEM_SECRET_FILE={tmp}/roll1

ctl: rekey
  prints: rekey: records 2/2
  prints: rows resealed: 5
  prints: rows that did not open: 0
  prints: records under older keys: 0

# The first key leaves the file.
env IDEM_SECRET_FILE={tmp}/second

request p2: POST /payments
  as alice
  Idempotency-Key: "roll-2"
  Content-Type: application/json
  body: {"amount": 20.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id2}

request p1-second: like p1
expect: 201
  replay-of: p1

secret third
secret roll2 from third second
env IDEM_SECRET_FILE={tmp}/roll2

ctl: rekey
  prints: rekey: records 3/3
  prints: rows resealed: 7
  prints: rows that did not open: 0
  prints: records under older keys: 0

env IDEM_SECRET_FILE={tmp}/third

request p1-third: like p1
expect: 201
  replay-of: p1

request r1-third: like r1
expect: 201
  replay-of: r1

request p2-third: like p2
expect: 201
  replay-of: p2

request get: GET /payments/{id}
  as alice
expect: 200
  json: {"id":"{id}","amount":10.00,"currency":"BRL","status":"succeeded","charge_id":"{any}","created_at":"{any}","amount_refunded":1.00}

request refund: GET /payments/{id}/refunds/{rid}
  as alice
expect: 200
  json: {"id":"{rid}","payment":"{id}","amount":1.00,"currency":"BRL","status":"succeeded","created_at":"{any}"}

request get2: GET /payments/{id2}
  as alice
expect: 200

# Nothing opens under the second key alone any more.
env IDEM_SECRET_FILE={tmp}/second
request p2-second: like p2
expect: 500
  problem: internal-error
