# Contract row "body not JSON where JSON is required" and invariant 7: a raw
# NUL byte inside a string is an unescaped control character: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-raw-nul"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BR{byte:00}L"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
