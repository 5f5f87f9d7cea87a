# Contract row "body not JSON where JSON is required" and invariant 7: \u
# with a non-hex digit: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-bad-unicode-escape"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "\u00G2BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
