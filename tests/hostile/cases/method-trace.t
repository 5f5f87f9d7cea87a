# RFC 9110 section 15.5.6: TRACE on /payments (a cross-site tracing probe):
# 405 with Allow, nothing stored.

request hostile: TRACE /payments
  as alice
  Idempotency-Key: "h-method-trace"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 405
  problem: method-not-allowed
  Allow: ~ (?=.*\bGET\b)(?=.*\bPOST\b)[A-Z, ]+
check: keys=0 payments=0 charges=0
