# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  A client header "Remote-User:
# acct_alice" arrives as HTTP_REMOTE_USER, never as REMOTE_USER, so it
# authenticates nobody: 401.

request hostile: POST /payments
  Idempotency-Key: "h-auth-remote-user-header"
  Content-Type: application/json
  Remote-User: acct_alice
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
