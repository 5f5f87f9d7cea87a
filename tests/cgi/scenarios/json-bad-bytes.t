# RFC 8259: JSON text is UTF-8 and numbers have a strict grammar.  Invalid
# UTF-8, a NUL after the value, a leading zero and an exponent out of range
# are 400 malformed-json, not stored; the same key then works.

request utf8: POST /payments
  as alice
  Idempotency-Key: "bytes-1"
  Content-Type: application/json
  body: {"amount": 1.00, "currency": "BR{byte:ff}"}
expect: 400
  problem: malformed-json

request nul: like utf8
  body: {"amount": 1.00, "currency": "BRL"}{byte:00}
expect: 400
  problem: malformed-json

request leading-zero: like utf8
  body: {"amount": 0100.00, "currency": "BRL"}
expect: 400
  problem: malformed-json

request exponent: like utf8
  body: {"amount": 1e999999999999, "currency": "BRL"}
expect: 400
  problem: malformed-json|invalid-payment
check: keys=0 payments=0 charges=0

request fixed: like utf8
  body: {"amount": 1.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed
