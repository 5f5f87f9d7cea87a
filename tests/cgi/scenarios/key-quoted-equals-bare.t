# Bare keys are accepted as well as quoted ones, and the stored key is the
# unquoted value: "k-77" and k-77 are the same key.

request quoted: POST /payments
  as alice
  Idempotency-Key: "k-77"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed

request bare: like quoted
  Idempotency-Key: k-77
expect: 201
  replay-of: quoted
check: keys=1 payments=1 charges=1
