# Contract row "body not JSON where JSON is required" and invariant 7: an
# exponent of 60,000 digits is read with saturation, not overflow, and
# refused: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-exponent-digits"
  Content-Type: application/json
  body: {"amount": 1e{repeat:60000:9}, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
