# Contract row "body not JSON where JSON is required" and invariant 7: 100.
# is not a JSON number: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-amount-trailing-dot"
  Content-Type: application/json
  body: {"amount": 100., "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
