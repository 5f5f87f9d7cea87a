# The fingerprint covers method, path, query and body: the same key and
# body with another query string is another request (422).

request first: POST /payments
  as alice
  Idempotency-Key: "fp-5"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

request query: POST /payments?note=x
  like first
expect: 422
  problem: key-reused
check: keys=1 payments=1 charges=1
