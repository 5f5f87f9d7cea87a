# Contract row "key not a valid Structured Field String (RFC 8941), empty,
# over 255 characters, control characters, or more than one key": a lone
# UTF-8 continuation byte (0x80) in the String: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "ab{byte:80}"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: invalid-key
check: keys=0 payments=0 charges=0
