# Contract row "handler answered 4xx": an amount given as a string is 400
# invalid-payment from the handler, stored, and replayed without running the
# handler again; the provider is never called.

request first: POST /payments
  as alice
  Idempotency-Key: "bad-1"
  Content-Type: application/json
  body: {"amount": "100.00", "currency": "BRL"}
expect: 400
  problem: invalid-payment
  no Idempotent-Replayed
check: keys=1 completed=1 in_progress=0 payments=0 charges=0

request retry: like first
expect: 400
  replay-of: first
check: keys=1 completed=1 payments=0 charges=0
