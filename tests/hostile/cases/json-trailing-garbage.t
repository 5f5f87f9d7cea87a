# Contract row "body not JSON where JSON is required" and invariant 7: text
# after the value: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-trailing-garbage"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"} charge-twice
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
