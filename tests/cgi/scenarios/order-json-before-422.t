# Check order: a malformed body under a completed key is 400 malformed-json
# (the body is checked before the store), not 422 and not a replay.

request first: POST /payments
  as alice
  Idempotency-Key: "ord-2"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

request broken: like first
  body: {"amount": 100.00,
expect: 400
  problem: malformed-json
  no Idempotent-Replayed

request text: like first
  Content-Type: text/plain
expect: 415
  problem: unsupported-media-type
check: keys=1 payments=1 charges=1
