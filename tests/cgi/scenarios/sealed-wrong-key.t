# A sealed value that does not open is a 500 problem+json for that
# request and a log line naming the value's key id, never the stored
# bytes and never a crash: under another key file, and with none.
# A key file is never replaced by idemctl new-secret.

request p1: POST /payments
  as alice
  Idempotency-Key: "wrong-key-1"
  Content-Type: application/json
  body: {"amount": 10.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

ctl: new-secret {tmp}/secret
  exit: 1
  prints: never replaced

secret other
env IDEM_SECRET_FILE={tmp}/other

request replay: like p1
expect: 500
  problem: internal-error
  stderr-has: key id

request get: GET /payments/{id}
  as alice
expect: 500
  problem: internal-error
  stderr-has: key id

unset IDEM_SECRET_FILE
request plain-replay: like p1
expect: 500
  problem: internal-error
  stderr-has: no key file

env IDEM_SECRET_FILE={tmp}/secret
request back: like p1
expect: 201
  replay-of: p1
