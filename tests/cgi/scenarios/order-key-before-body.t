# Check order: the key is checked before the body.  An invalid key with a
# body over the limit is 400 invalid-key, not 413.

env IDEM_BODY_LIMIT=1024

request first: POST /payments
  as alice
  Idempotency-Key: ""
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
  pad-body-to: 4096
expect: 400
  problem: invalid-key
check: keys=0 payments=0 charges=0
