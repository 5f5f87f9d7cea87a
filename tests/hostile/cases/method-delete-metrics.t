# RFC 9110 section 15.5.6: DELETE /metrics: 405 with Allow, nothing stored.

request hostile: DELETE /metrics
  as alice
  Idempotency-Key: "h-method-delete-metrics"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 405
  problem: method-not-allowed
  Allow: ~ (?=.*\bGET\b)(?!.*\bPOST\b)[A-Z, ]+
check: keys=0 payments=0 charges=0
