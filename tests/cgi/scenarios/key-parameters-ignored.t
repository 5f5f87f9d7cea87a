# Parameters on the Item (RFC 8941 3.1.2) are parsed and ignored:
# "pk-1";v=1 is the key pk-1.

request params: POST /payments
  as alice
  Idempotency-Key: "pk-1";v=1
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed

request plain: like params
  Idempotency-Key: "pk-1"
expect: 201
  replay-of: params
check: keys=1 payments=1 charges=1
