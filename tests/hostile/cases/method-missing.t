# A request with no REQUEST_METHOD at all: 400 bad-request, nothing stored.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-method-missing"
  Content-Type: application/json
  unset REQUEST_METHOD
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: bad-request
check: keys=0 payments=0 charges=0
