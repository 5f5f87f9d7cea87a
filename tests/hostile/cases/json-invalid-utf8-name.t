# Contract row "body not JSON where JSON is required" and invariant 7: RFC
# 8259 section 8.1: JSON text is UTF-8; a byte FF in a member name: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-invalid-utf8-name"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL", "n{byte:ff}": 1}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
