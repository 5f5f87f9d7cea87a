# Contract row "handler answered 2xx or 4xx": an invalid payment is a final
# answer, stored and replayed, and never reaches the provider.  A currency
# holding JSON syntax (a quote and a forged member): 400, and the detail
# that quotes it stays one JSON string.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-currency-quote-injection"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL\", \"status\": 201, \"x\": \""}
expect: 400
  problem: invalid-payment
  utf8-body
  no Idempotent-Replayed
  json: {"type": "/problems/invalid-payment.html", "title": "{any}", "status": 400, "detail": "{any}", "instance": "{any}"}
check: keys=1 completed=1 in_progress=0 payments=0 charges=0

request retry: like hostile
expect: 400
  replay-of: hostile
  utf8-body
check: keys=1 completed=1 payments=0 charges=0
