# Contract row "body not JSON where JSON is required" and invariant 7: two
# JSON texts back to back (one request carrying two payments): 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-two-documents"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}{"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
