# Invariant 4 (isolation): the same key in two accounts is two operations:
# two payments, two charges, and neither account sees the other's answer.

request alice: POST /payments
  as alice
  Idempotency-Key: "shared-key-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{alice_id}
  no Idempotent-Replayed

request bob: like alice
  as bob
expect: 201
  Location: /payments/{bob_id}
  no Idempotent-Replayed
check: keys=2 payments=2 charges=2

# A different body under bob's same key is 422 for bob only...
request bob-other: like bob
  body: {"amount": 7.00, "currency": "BRL"}
expect: 422
  problem: key-reused

# ...and each account's retry replays its own payment.
request alice-retry: like alice
expect: 201
  replay-of: alice
request bob-retry: like bob
expect: 201
  replay-of: bob
check: payments=2 charges=2
