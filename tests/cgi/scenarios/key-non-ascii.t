# Contract row "key not a valid Structured Field String ...": a non-ASCII byte (UTF-8 e-acute)
# is 400, not stored, no charge.

request first: POST /payments
  as alice
  Idempotency-Key: "caf{byte:c3}{byte:a9}"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: invalid-key
check: keys=0 payments=0 charges=0
