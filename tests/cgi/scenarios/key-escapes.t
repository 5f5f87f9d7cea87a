# RFC 8941 String escapes \" and \\ are valid; the key is the unescaped
# value, and the same escaped field replays.

request first: POST /payments
  as alice
  Idempotency-Key: "a\"b\\c"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed

request retry: like first
expect: 201
  replay-of: first

# A different key that differs only in the escapes is a different key.
request other: like first
  Idempotency-Key: "a\"b"
expect: 201
  no Idempotent-Replayed
check: keys=2 payments=2 charges=2
