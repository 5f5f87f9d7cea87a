# Contract row "store unavailable", PostgreSQL: IDEM_STORE names a
# server that is not there (no socket), so the store cannot open: 503
# with Retry-After and a problem, no crash, nothing charged.

request first: POST /payments
  as alice
  Idempotency-Key: "su-1"
  Content-Type: application/json
  env IDEM_STORE=postgresql:///idem?host={tmp}/nosock&port=1
  body: {"amount": 100.00, "currency": "BRL"}
expect: 503
  problem: store-unavailable
  Retry-After: ~ [1-9][0-9]*
  no Location

# Nothing was charged: not even the provider's ledger was opened, so
# stats finds no store to count (on LMDB the idempotency store is not
# there either).
ctl: stats
  exit: 1
  prints: no store there
