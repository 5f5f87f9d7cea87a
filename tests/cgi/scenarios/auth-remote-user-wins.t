# In remote-user mode REMOTE_USER is the scope even if an Authorization
# field is present too, and the Authorization field alone authenticates
# nobody: the web server's word is the only one, so the client cannot
# choose the scope with a header.

env IDEM_AUTH=remote-user

request carol: POST /payments
  env REMOTE_USER=acct_carol
  as alice
  Idempotency-Key: "ru-2"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed
check: keys=1 payments=1 charges=1

# alice's valid API key alone, same key, other body: not authenticated
# (not a 422 on carol's key either), nothing stored.
request alice-key: like carol
  unset REMOTE_USER
  body: {"amount": 9.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Basic realm="idem"
check: keys=1 payments=1 charges=1

# alice as the web server names her: her own scope, a fresh 201.
request alice: like alice-key
  env REMOTE_USER=acct_alice
  drop Authorization
expect: 201
  no Idempotent-Replayed
check: keys=2 payments=2 charges=2
