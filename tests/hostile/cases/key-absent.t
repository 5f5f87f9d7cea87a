# Contract row "no Idempotency-Key on a key-requiring endpoint": 400
# missing-key, nothing stored, nothing charged.

request hostile: POST /payments
  as alice
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: missing-key
check: keys=0 payments=0 charges=0
