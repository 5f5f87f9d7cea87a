# Contract row "key not a valid Structured Field String (RFC 8941), empty,
# over 255 characters, control characters, or more than one key":
# well-formed UTF-8 (a four-byte emoji) is still not visible ASCII: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "pay-{byte:f0}{byte:9f}{byte:92}{byte:b3}"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: invalid-key
check: keys=0 payments=0 charges=0
