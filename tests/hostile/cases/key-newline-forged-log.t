# Contract row "key not a valid Structured Field String (RFC 8941), empty,
# over 255 characters, control characters, or more than one key": a raw line
# feed in the key, followed by text shaped like a log line: 400, and the log
# carries the key only as a hash, so no forged line appears.

request hostile: POST /payments
  as alice
  Idempotency-Key: "ab{byte:0a}idem: 10.0.0.1 POST /payments 201 key=forged outcome=claim ms=1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: invalid-key
  stderr-lacks: {byte:0a}idem: 10.0.0.1 POST /payments 201
check: keys=0 payments=0 charges=0
