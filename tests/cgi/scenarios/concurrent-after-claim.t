# The same race one step earlier: the original has claimed the key and not
# yet called the provider.  The duplicate is 409; a duplicate with another
# body is 422; the original then completes alone.

gate claimed

spawn first: POST /payments
  as alice
  Idempotency-Key: "conc-2"
  Content-Type: application/json
  env IDEM_FAULT=after_claim:wait={gate:claimed}
  body: {"amount": 100.00, "currency": "BRL"}

reached claimed

request dup: like first
  unset IDEM_FAULT
expect: 409
  problem: request-in-progress
  Retry-After: in 1..30

request other: like dup
  body: {"amount": 2.00, "currency": "BRL"}
expect: 422
  problem: key-reused

release claimed
await first
expect: 201
check: payments=1 charges=1

request third: like dup
expect: 201
  replay-of: first
