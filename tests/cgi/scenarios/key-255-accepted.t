# A key of exactly 255 characters is accepted, bare and quoted, and replays.

request bare: POST /payments
  as alice
  Idempotency-Key: {repeat:255:k}
  Content-Type: application/json
  body: {"amount": 1.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed

request quoted: like bare
  Idempotency-Key: "{repeat:255:q}"
expect: 201
  no Idempotent-Replayed

request bare-retry: like bare
expect: 201
  replay-of: bare
request quoted-retry: like quoted
expect: 201
  replay-of: quoted
check: keys=2 payments=2 charges=2
