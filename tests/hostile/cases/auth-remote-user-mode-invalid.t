# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  With IDEM_AUTH=remote-user the web
# server's REMOTE_USER is the principal, but only if it is a valid
# principal: "../acct_alice" is refused.

request hostile: POST /payments
  Idempotency-Key: "h-auth-remote-user-mode-invalid"
  Content-Type: application/json
  env IDEM_AUTH=remote-user
  env REMOTE_USER=../acct_alice
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Basic realm="idem".*
check: keys=0 payments=0 charges=0
