# Contract row "body over the limit": 413, not stored; the limit comes from
# IDEM_BODY_LIMIT.  A body of exactly the limit is fine.

env IDEM_BODY_LIMIT=1024

request big: POST /payments
  as alice
  Idempotency-Key: "big-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
  pad-body-to: 1025
expect: 413
  problem: body-too-large
check: keys=0 payments=0 charges=0

# Same key, a body of exactly 1024 bytes (trailing white space is valid
# JSON): not stored before, so a fresh 201 now.
request exact: like big
  pad-body-to: 1024
expect: 201
  no Idempotent-Replayed
check: keys=1 payments=1 charges=1
