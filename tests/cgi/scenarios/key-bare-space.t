# A key sent without quotes that has a space in it: 400 invalid-key, told
# to drop the space or quote the key (tests/unit/test_key.c holds the
# words); not stored, no charge.  The same key quoted is one key.

request first: POST /payments
  as alice
  Idempotency-Key: order 42
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: invalid-key
check: keys=0 payments=0 charges=0

request quoted: POST /payments
  as alice
  Idempotency-Key: "order 42"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
check: keys=1 payments=1 charges=1
