# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  With IDEM_AUTH=remote-user, a
# REMOTE_USER holding a newline and a forged log line is no principal: 401,
# and nothing forged reaches the log.

request hostile: POST /payments
  Idempotency-Key: "h-auth-remote-user-mode-newline"
  Content-Type: application/json
  env IDEM_AUTH=remote-user
  env REMOTE_USER=acct_alice{byte:0a}idem: forged
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Basic realm="idem".*
  stderr-lacks: {byte:0a}idem: forged
check: keys=0 payments=0 charges=0
