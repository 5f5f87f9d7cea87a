# Rolling the sealing key, on any store: a key file listing a new key
# first and the old one after it seals new values under the new key and
# still opens the old ones; idemctl rekey rewrites every row sealed under
# the old key, in batches, with a progress count, and a second run finds
# nothing; then the rows open under the new key alone.  Records are
# rewritten where the store can (LMDB: sealed-key-roll.t); PostgreSQL's
# keep the old key until their TTL.

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
  prints: rows that did not open: 0

ctl: rekey
  prints: rows resealed: 0

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
