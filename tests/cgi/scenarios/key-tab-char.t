# Contract row "key not a valid Structured Field String ...": a tab inside the String (RFC 8941 allows only 0x20-0x7E)
# is 400, not stored, no charge.

request first: POST /payments
  as alice
  Idempotency-Key: "ab{byte:09}cd"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: invalid-key
check: keys=0 payments=0 charges=0
