# RFC 9110 section 15.5.6: POST to a payment's own URI: 405 with Allow,
# nothing stored.

request hostile: POST /payments/pay_0123456789abcdef01234567
  as alice
  Idempotency-Key: "h-method-post-on-id"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 405
  problem: method-not-allowed
  Allow: ~ (?=.*\bGET\b)(?!.*\bPOST\b)[A-Z, ]+
check: keys=0 payments=0 charges=0
