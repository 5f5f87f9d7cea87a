# Contract row "handler answered 2xx or 4xx": an invalid payment is a final
# answer, stored and replayed, and never reaches the provider.  a
# 60,000-character string in an unknown member: a stored 400 invalid-payment
# whose stored answer is the short problem, not the body.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-long"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL", "note": "{repeat:60000:n}"}
expect: 400
  problem: invalid-payment
  utf8-body
  Content-Length: ~ [0-9]{2,3}
check: keys=1 completed=1 payments=0 charges=0

request retry: like hostile
expect: 400
  replay-of: hostile
check: keys=1 completed=1 payments=0 charges=0
