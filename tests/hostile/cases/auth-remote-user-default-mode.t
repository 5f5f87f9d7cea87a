# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  In the default mode the responder does
# not trust REMOTE_USER: a meta-variable set by whatever runs the program is
# not authentication unless the deployment says so (IDEM_AUTH=remote-user).
# REMOTE_USER alone: 401.

request hostile: POST /payments
  Idempotency-Key: "h-auth-remote-user-default-mode"
  Content-Type: application/json
  env REMOTE_USER=acct_alice
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
