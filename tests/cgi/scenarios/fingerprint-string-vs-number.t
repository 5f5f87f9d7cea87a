# A loose deep-equal would count "100.00" and 100.00 as the same request;
# they are different JSON, so reusing the key is 422.

request number: POST /payments
  as alice
  Idempotency-Key: "fp-3"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

request string: like number
  body: {"amount": "100.00", "currency": "BRL"}
expect: 422
  problem: key-reused
check: keys=1 payments=1 charges=1
