# Contract row "body not JSON where JSON is required" and invariant 7: a
# body cut off inside a string is 400 malformed-json, nothing stored.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-truncated"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BR
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
