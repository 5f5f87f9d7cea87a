# In remote-user mode (IDEM_AUTH=remote-user: the web server authenticated
# the request) REMOTE_USER is the principal and so the scope, with no
# Authorization field at all.

env IDEM_AUTH=remote-user

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
  env REMOTE_USER=acct_alice
  body: {"amount": 5.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed

# alice cannot read carol's payment.
request alice-get: GET /payments/{id}
  env REMOTE_USER=acct_alice
expect: 404
  problem: not-found
check: keys=2 payments=2 charges=2
