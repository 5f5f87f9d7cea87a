# Contract row "no Idempotency-Key on a key-requiring endpoint": 400, not
# stored, the handler does not run (no charge).

request first: POST /payments
  as alice
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: missing-key
  no Location
check: keys=0 payments=0 charges=0
