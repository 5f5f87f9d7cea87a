# Contract row "body not JSON where JSON is required" and invariant 7: a
# body of white space only is not JSON: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-whitespace-only"
  Content-Type: application/json
  body: {repeat:64: }
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
