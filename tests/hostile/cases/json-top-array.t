# Contract row "handler answered 2xx or 4xx": an invalid payment is a final
# answer, stored and replayed, and never reaches the provider.  a JSON array
# at the top level is valid JSON but no payment: a stored 400
# invalid-payment, replayed.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-top-array"
  Content-Type: application/json
  body: [{"amount": 100.00, "currency": "BRL"}]
expect: 400
  problem: invalid-payment
  utf8-body
check: keys=1 completed=1 payments=0 charges=0

request retry: like hostile
expect: 400
  replay-of: hostile
check: keys=1 completed=1 payments=0 charges=0
