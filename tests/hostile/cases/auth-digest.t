# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  HTTP Digest naming the account.

request hostile: POST /payments
  Idempotency-Key: "h-auth-digest"
  Content-Type: application/json
  Authorization: Digest username="acct_alice", realm="idem", response="0"
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
