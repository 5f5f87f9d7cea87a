# The monitoring account (IDEM_METRICS_ACCOUNT) reads /metrics and nothing
# else: a credential kept by a monitoring system cannot make, list or read
# payments.  403, nothing stored, nothing charged.

env IDEM_METRICS_ACCOUNT=acct_bob

request pay: POST /payments
  as bob
  Idempotency-Key: "mon-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 403
  problem: forbidden
check: keys=0 payments=0 charges=0

request list: GET /payments
  as bob
expect: 403
  problem: forbidden

# Any other account is unaffected, with the same key.
request alice: like pay
  as alice
expect: 201
  Location: /payments/{id}
check: keys=1 payments=1 charges=1

request read: GET /payments/{id}
  as bob
expect: 403
  problem: forbidden

# The same in remote-user mode, with the default name.
request remote: like pay
  drop Authorization
  env IDEM_AUTH=remote-user
  env IDEM_METRICS_ACCOUNT=metrics
  env REMOTE_USER=metrics
expect: 403
  problem: forbidden
check: keys=1 payments=1 charges=1
