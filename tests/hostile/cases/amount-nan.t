# Contract row "body not JSON where JSON is required" and invariant 7: NaN
# is not JSON: 400 malformed-json, nothing stored.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-amount-nan"
  Content-Type: application/json
  body: {"amount": NaN, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
