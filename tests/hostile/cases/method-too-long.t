# A 17-letter method, past the responder's bound: 400 bad-request.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-method-long"
  Content-Type: application/json
  env REQUEST_METHOD=POSTPOSTPOSTPOSTP
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: bad-request
check: keys=0 payments=0 charges=0
