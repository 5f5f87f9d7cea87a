# Contract row "body not JSON where JSON is required" and invariant 7: the
# design rejects duplicate member names (RFC 8259 section 4 leaves their
# meaning undefined, and two parsers may pick different amounts): 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-duplicate-member"
  Content-Type: application/json
  body: {"amount": 1.00, "amount": 1000.00, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
