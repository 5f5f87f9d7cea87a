# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  With IDEM_AUTH=remote-user, a
# REMOTE_USER of 65 characters is longer than any principal (64) and is
# refused, not truncated into another account's name: 401.

request hostile: POST /payments
  Idempotency-Key: "h-auth-remote-user-mode-too-long"
  Content-Type: application/json
  env IDEM_AUTH=remote-user
  env REMOTE_USER=acct_alice{repeat:55:x}
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Basic realm="idem".*
check: keys=0 payments=0 charges=0
