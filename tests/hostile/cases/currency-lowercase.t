# Contract row "handler answered 2xx or 4xx": an invalid payment is a final
# answer, stored and replayed, and never reaches the provider.  Codes are
# upper case; "brl" is not BRL: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-currency-lowercase"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "brl"}
expect: 400
  problem: invalid-payment
  utf8-body
  no Idempotent-Replayed
check: keys=1 completed=1 in_progress=0 payments=0 charges=0

request retry: like hostile
expect: 400
  replay-of: hostile
  utf8-body
check: keys=1 completed=1 payments=0 charges=0
