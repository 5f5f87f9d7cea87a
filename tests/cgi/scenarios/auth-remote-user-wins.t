# When the web server authenticated the request, REMOTE_USER is the scope
# even if an Authorization field is present too: the client cannot choose
# the scope with a header.

request carol: POST /payments
  env REMOTE_USER=acct_carol
  as alice
  Idempotency-Key: "ru-2"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed

# alice alone, same key, other body: not carol's key, so not a 422.
request alice: like carol
  unset REMOTE_USER
  body: {"amount": 9.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed
check: keys=2 payments=2 charges=2
