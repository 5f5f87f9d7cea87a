# Contract row "body not JSON where JSON is required" and invariant 7:
# \u0000 in a string value.  The payment's fields are C strings after
# parsing, so a NUL would cut a value short unseen; it is refused at the
# edge: 400 malformed-json, nothing stored.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-nul-escape-value"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL", "note": "a\u0000b"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
