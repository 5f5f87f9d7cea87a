# REMOTE_USER, set when the web server authenticated the request, is the
# principal and so the scope, with no Authorization field at all.

request carol: POST /payments
  env REMOTE_USER=acct_carol
  Idempotency-Key: "ru-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}
  no Idempotent-Replayed

request carol-retry: like carol
expect: 201
  replay-of: carol

# carol can read her payment.
request carol-get: GET /payments/{id}
  env REMOTE_USER=acct_carol
expect: 200
  body-of: carol

# alice, another scope, with the same key and another body: a fresh 201.
request alice: like carol
  unset REMOTE_USER
  as alice
  body: {"amount": 5.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed
check: keys=2 payments=2 charges=2
