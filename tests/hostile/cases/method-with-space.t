# A method with a space and a path in it (a broken front end): 400
# bad-request.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-method-space"
  Content-Type: application/json
  env REQUEST_METHOD=POST /payments
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: bad-request
check: keys=0 payments=0 charges=0
