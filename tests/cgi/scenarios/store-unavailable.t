# Contract row "store unavailable": IDEM_DB_DIR is a regular file, so the
# store cannot open: 503 with Retry-After and a problem, no crash.
# store: LMDB only (store-unreachable.t is the PostgreSQL store's case)

file notadir

request first: POST /payments
  as alice
  Idempotency-Key: "st-1"
  Content-Type: application/json
  env IDEM_DB_DIR={tmp}/notadir
  body: {"amount": 100.00, "currency": "BRL"}
expect: 503
  problem: store-unavailable
  Retry-After: ~ [1-9][0-9]*
  no Location

request below: like first
  env IDEM_DB_DIR={tmp}/notadir/db
expect: 503
  problem: store-unavailable
  Retry-After: ~ [1-9][0-9]*

# Nothing was charged: not even the provider's ledger was opened, so
# stats finds no store to count.
ctl: stats
  exit: 1
  prints: no store there
