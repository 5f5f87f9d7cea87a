# Contract row "body not JSON where JSON is required" and invariant 7: 0x10
# is not a JSON number: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-amount-hex"
  Content-Type: application/json
  body: {"amount": 0x10, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
