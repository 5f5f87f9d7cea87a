# Contract row "handler answered 2xx or 4xx": an invalid payment is a final
# answer, stored and replayed, and never reaches the provider.  A currency
# holding a newline and a forged log line: 400; the log never carries the
# body.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-currency-newline-forged-log"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL\nidem: 10.0.0.1 POST /payments 201"}
expect: 400
  problem: invalid-payment
  utf8-body
  no Idempotent-Replayed
  stderr-lacks: {byte:0a}idem: 10.0.0.1 POST /payments 201
check: keys=1 completed=1 in_progress=0 payments=0 charges=0

request retry: like hostile
expect: 400
  replay-of: hostile
  utf8-body
check: keys=1 completed=1 payments=0 charges=0
