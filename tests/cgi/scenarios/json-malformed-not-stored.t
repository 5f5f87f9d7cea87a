# Contract row "body not JSON where JSON is required": 400 malformed-json,
# not stored, so a retry with a fixed body and the same key gets 201.

request broken: POST /payments
  as alice
  Idempotency-Key: "json-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0

request trailing: like broken
  body: {"amount": 100.00, "currency": "BRL"} x
expect: 400
  problem: malformed-json

request single-quotes: like broken
  body: {'amount': 100.00, 'currency': 'BRL'}
expect: 400
  problem: malformed-json

request empty: like broken
  body:
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0

request fixed: like broken
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed
check: keys=1 payments=1 charges=1
