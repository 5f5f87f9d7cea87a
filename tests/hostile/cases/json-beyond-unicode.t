# Contract row "body not JSON where JSON is required" and invariant 7: a
# four-byte sequence past U+10FFFF (F4 90 80 80): 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-beyond-unicode"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL{byte:f4}{byte:90}{byte:80}{byte:80}"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
