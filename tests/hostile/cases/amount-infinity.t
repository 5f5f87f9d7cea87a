# Contract row "body not JSON where JSON is required" and invariant 7:
# Infinity is not JSON: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-amount-infinity"
  Content-Type: application/json
  body: {"amount": Infinity, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
