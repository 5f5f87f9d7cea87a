# Contract row "key not a valid Structured Field String (RFC 8941), empty,
# over 255 characters, control characters, or more than one key": an ANSI
# terminal escape (ESC [31m) in a bare key: 400, and it does not reach the
# log.

request hostile: POST /payments
  as alice
  Idempotency-Key: ab{byte:1b}[31mcd
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: invalid-key
  stderr-lacks: {byte:1b}[31m
check: keys=0 payments=0 charges=0
