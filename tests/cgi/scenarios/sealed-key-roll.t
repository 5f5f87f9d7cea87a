# Rolling the sealing key: a key file listing a new key first and the old
# one after it seals new values under the new key and still opens the
# old ones; idemctl rekey rewrites every row and record sealed under the
# old key, in batches, with a progress count, and a second run finds
# nothing; then, with the old key gone from the file, every replay and
# every GET answers as before.  The same on PostgreSQL (its records are
# rewritten in place too).

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

request pa: like p1
  Idempotency-Key: "roll-a"
expect: 201

request pb: like p1
  Idempotency-Key: "roll-b"
expect: 201

secret new
secret both from new secret
env IDEM_SECRET_FILE={tmp}/both

request p1-again: like p1
expect: 201
  replay-of: p1

request p2: POST /payments
  as alice
  Idempotency-Key: "roll-2"
  Content-Type: application/json
  body: {"amount": 20.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id2}

ctl: rekey -n 2 -w 0
  prints: rekey: payments 2/3
  prints: rekey: payments 3/3
  prints: rekey: by_account 3/3
  prints: rekey: refunds 1/1
  prints: rows resealed: 9
  prints: rekey: records 2/4
  prints: rekey: records 4/4
  prints: rows that did not open: 0
  prints: records under older keys: 0

ctl: rekey
  prints: rows resealed: 0
  prints: records under older keys: 0

env IDEM_SECRET_FILE={tmp}/new
request get: GET /payments/{id}
  as alice
expect: 200
  json: {"id":"{id}","amount":10.00,"currency":"BRL","status":"succeeded","charge_id":"{any}","created_at":"{any}","amount_refunded":1.00}

request list: GET /payments
  as alice
expect: 200

request p2-again: like p2
expect: 201
  replay-of: p2

request p1-rekeyed: like p1
expect: 201
  replay-of: p1

request r1-rekeyed: like r1
expect: 201
  replay-of: r1

request pa-rekeyed: like pa
expect: 201
  replay-of: pa

request pb-rekeyed: like pb
expect: 201
  replay-of: pb

request refund: GET /payments/{id}/refunds/{rid}
  as alice
expect: 200
  json: {"id":"{rid}","payment":"{id}","amount":1.00,"currency":"BRL","status":"succeeded","created_at":"{any}"}

request refunds: GET /payments/{id}/refunds
  as alice
expect: 200

request get2: GET /payments/{id2}
  as alice
expect: 200

# And nothing opens under the old key alone any more.
env IDEM_SECRET_FILE={tmp}/secret
request p1-old: like p1
expect: 500
  problem: internal-error
