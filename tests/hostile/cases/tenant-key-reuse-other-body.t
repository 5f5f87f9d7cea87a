# Invariant 4, isolation: bob reusing alice's key with another body is not a
# 422 (that would reveal alice's key exists): a fresh 201 in bob's scope.

request alice: POST /payments
  as alice
  Idempotency-Key: "h-tenant-probe"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

request bob: like alice
  as bob
  body: {"amount": 1.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed
check: keys=2 payments=2 charges=2
