# Contract row "body not JSON where JSON is required" and invariant 7: .5 is
# not a JSON number: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-amount-leading-dot"
  Content-Type: application/json
  body: {"amount": .5, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
