# Contract row "body not JSON where JSON is required" and invariant 7: RFC
# 8259 section 8.2: an escaped high surrogate with no low one names no
# character: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-lone-high-surrogate"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL\ud800"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
