# Contract row "handler answered 2xx or 4xx": an invalid payment is a final
# answer, stored and replayed, and never reaches the provider.  JSON nested
# exactly to the parser's bound (an object and 63 arrays, 64 containers) is
# valid JSON, so it reaches the payment's validation, which refuses the
# unknown member: a stored 400 invalid-payment, replayed (json-depth-65 is
# one deeper).

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-depth-64"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL", "x": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}
expect: 400
  problem: invalid-payment
  utf8-body
check: keys=1 completed=1 payments=0 charges=0

request retry: like hostile
expect: 400
  replay-of: hostile
check: keys=1 completed=1 payments=0 charges=0
