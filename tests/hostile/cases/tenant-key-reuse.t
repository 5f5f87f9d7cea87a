# Invariant 4, isolation: bob sending alice's key with alice's exact body is
# a new payment in bob's scope: 201 with no Idempotent-Replayed, never
# alice's stored answer.

request alice: POST /payments
  as alice
  Idempotency-Key: "h-tenant-shared-key"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request bob: like alice
  as bob
expect: 201
  no Idempotent-Replayed
  Location: ~ /payments/pay_[0-9a-f]{24}
check: keys=2 payments=2 charges=2

request bob-retry: like bob
expect: 201
  replay-of: bob

request alice-retry: like alice
expect: 201
  replay-of: alice
check: keys=2 payments=2 charges=2
