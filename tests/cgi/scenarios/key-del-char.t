# Contract row "key not a valid Structured Field String ...": DEL (0x7F) inside the String
# is 400, not stored, no charge.

request first: POST /payments
  as alice
  Idempotency-Key: "ab{byte:7f}cd"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: invalid-key
check: keys=0 payments=0 charges=0
