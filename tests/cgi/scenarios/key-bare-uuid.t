# The most common client behaviour: a bare UUID v4.  Accepted, and the same
# key as its quoted form.

request bare: POST /payments
  as alice
  Idempotency-Key: 8e03978e-40d5-43e8-bc93-6894a57f9324
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}
  no Idempotent-Replayed

request quoted: like bare
  Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"
expect: 201
  replay-of: bare
check: keys=1 payments=1 charges=1
