# Contract row "body not JSON where JSON is required" and invariant 7: an
# empty body is not JSON: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-empty-body"
  Content-Type: application/json
  body:
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
