# Contract row "body not JSON where JSON is required" and invariant 7: an
# escaped low surrogate on its own: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-lone-low-surrogate"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "\udc00BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
