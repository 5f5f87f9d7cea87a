# In remote-user mode a principal is 1..64 characters of [A-Za-z0-9._@-];
# any other REMOTE_USER is refused rather than used as a scope, and a valid
# API key beside it does not rescue it.

env IDEM_AUTH=remote-user

request spaced: POST /payments
  env REMOTE_USER=bad user
  Idempotency-Key: "ru-3"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized

request long: like spaced
  env REMOTE_USER={repeat:65:u}
expect: 401
  problem: unauthorized

request with-key: like spaced
  as alice
expect: 401
  problem: unauthorized
check: keys=0 payments=0 charges=0
