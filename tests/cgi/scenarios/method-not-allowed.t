# A known path with a method it does not answer is 405 with Allow
# (RFC 9110 15.5.6) listing the methods it does answer.

request delete: DELETE /payments
  as alice
expect: 405
  problem: method-not-allowed
  Allow: ~ (?=.*\bGET\b)(?=.*\bPOST\b)[A-Z, ]+

request put: PUT /payments/pay_000000000000000000000000
  as alice
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 405
  problem: method-not-allowed
  Allow: ~ (?=.*\bGET\b)(?!.*\bPOST\b)[A-Z, ]+

request post-health: POST /healthz
  Content-Type: application/json
  body: {}
expect: 405
  problem: method-not-allowed
  Allow: ~ (?=.*\bGET\b)(?!.*\bPOST\b)[A-Z, ]+
check: keys=0 payments=0 charges=0
