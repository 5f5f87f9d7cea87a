# Duplicate member names are rejected (RFC 8259 4 leaves them undefined; two
# parsers could read different amounts): 400, not stored.

request dup: POST /payments
  as alice
  Idempotency-Key: "json-2"
  Content-Type: application/json
  body: {"amount": 1.00, "currency": "BRL", "amount": 100.00}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0

request fixed: like dup
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed
check: keys=1 payments=1 charges=1
