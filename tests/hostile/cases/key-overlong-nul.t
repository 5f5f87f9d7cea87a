# Contract row "key not a valid Structured Field String (RFC 8941), empty,
# over 255 characters, control characters, or more than one key": the
# overlong UTF-8 form of NUL (C0 80), a classic way to hide a NUL: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "ab{byte:c0}{byte:80}cd"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: invalid-key
check: keys=0 payments=0 charges=0
