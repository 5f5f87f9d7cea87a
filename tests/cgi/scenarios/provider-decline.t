# Contract row "handler answered 4xx (402 declined)": the decline is a final
# answer, stored and replayed without a second provider call.

request first: POST /payments
  as alice
  Idempotency-Key: "dec-1"
  Content-Type: application/json
  env IDEM_PROVIDER_FAIL=decline
  body: {"amount": 100.00, "currency": "BRL"}
expect: 402
  problem: payment-declined
  no Idempotent-Replayed
check: keys=1 completed=1 in_progress=0 payments=0 charges=0 declines=1

# The retry replays the decline even though the provider would now charge:
# the handler does not run again.
request retry: like first
  unset IDEM_PROVIDER_FAIL
expect: 402
  replay-of: first
check: keys=1 completed=1 payments=0 charges=0 declines=1
