# Contract row "Content-Length that lies": CONTENT_LENGTH larger than the
# body that arrives is 400, not stored.

request short: POST /payments
  as alice
  Idempotency-Key: "cl-1"
  Content-Type: application/json
  Content-Length: 60
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: bad-content-length
check: keys=0 payments=0 charges=0

# The honest request with the same key is fresh.
request honest: like short
  drop Content-Length
expect: 201
  no Idempotent-Replayed
check: keys=1 payments=1 charges=1
