# Contract row "body not JSON where JSON is required" and invariant 7: the
# design refuses numbers whose normalised exponent is beyond 10^9 as
# malformed (RFC 8259 section 9 lets a parser bound range): 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-huge-exponent"
  Content-Type: application/json
  body: {"amount": 1e999999999999, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
