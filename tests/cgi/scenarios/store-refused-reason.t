# A PostgreSQL store that refuses the connection: libpq's own reason
# (PQerrorMessage, here "Connection refused" from a port where nothing
# listens) is in the responder's log line, in idemctl's message and in
# --check-config's, beside the 503 or exit status 1 the contract gives.
# store: LMDB only (the scenario names its own IDEM_STORE)

env IDEM_STORE=postgresql://idem@127.0.0.1:1/idem?connect_timeout=5

request first: POST /payments
  as alice
  Idempotency-Key: "refused-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 503
  problem: store-unavailable
  stderr-has: Connection refused

ctl: inspect acct_alice refused-1
  exit: 1
  prints: Connection refused
ctl: migrate
  exit: 1
  prints: Connection refused
run: idem-fcgi --check-config
  exit: 1
  prints: Connection refused
