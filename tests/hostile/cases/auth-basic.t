# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  HTTP Basic with the account name and any
# password (the responder only takes Bearer keys, or the web server's
# REMOTE_USER when configured to): 401.

request hostile: POST /payments
  Idempotency-Key: "h-auth-basic"
  Content-Type: application/json
  Authorization: Basic YWNjdF9hbGljZTpodW50ZXIy
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
