# Contract row "body not JSON where JSON is required" and invariant 7: a
# duplicate hidden by an escape: "\u0061mount" unescapes to "amount": 400,
# like any duplicate.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-duplicate-by-escape"
  Content-Type: application/json
  body: {"amount": 1.00, "\u0061mount": 1000.00, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
