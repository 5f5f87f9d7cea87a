# Contract row "key not a valid Structured Field String (RFC 8941), empty,
# over 255 characters, control characters, or more than one key": a quoted
# key of 256 backslashes, each written as the escape \\ (512 characters on
# the wire), is over 255 once unescaped: 400.  The same key with 255 of them
# is exactly at the limit and accepted, so the bound is on the value, not on
# the field.

request hostile: POST /payments
  as alice
  Idempotency-Key: "{repeat:256:\\}"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: invalid-key
check: keys=0 payments=0 charges=0

request at-limit: like hostile
  Idempotency-Key: "{repeat:255:\\}"
expect: 201
  no Idempotent-Replayed
check: keys=1 payments=1 charges=1
