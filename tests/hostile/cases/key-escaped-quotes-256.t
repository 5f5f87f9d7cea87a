# Contract row "key not a valid Structured Field String (RFC 8941), empty,
# over 255 characters, control characters, or more than one key": a quoted
# key of 128 pairs \" and x (384 characters on the wire, 256 unescaped) is
# over 255: 400, nothing stored.

request hostile: POST /payments
  as alice
  Idempotency-Key: "{repeat:128:\"x}"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: invalid-key
check: keys=0 payments=0 charges=0
