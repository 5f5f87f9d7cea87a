# With IDEM_AUTH=remote-user the web server authenticated the request and
# REMOTE_USER is the scope (the control case for
# auth-remote-user-default-mode): 201 for acct_carol, who has no API key; in
# the default mode the same request is 401.

request carol: POST /payments
  Idempotency-Key: "h-ru-trusted"
  Content-Type: application/json
  env IDEM_AUTH=remote-user
  env REMOTE_USER=acct_carol
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}
check: keys=1 payments=1 charges=1

request default-mode: like carol
  unset IDEM_AUTH
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=1 payments=1 charges=1
