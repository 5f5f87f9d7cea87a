# A FIFO where a program reads a file at start: the key file
# (IDEM_SECRET_FILE), the API keys (IDEM_KEYS_FILE), a store's
# data.mdb (idem-fcgi's IDEM_DB_DIR, idem-provider's IDEM_PROVIDER_DB).  Opening one for reading waits for a writer that never
# comes; every program refuses it at once instead, with a message that
# names it, in --check-config and in a real start (a request: a
# configuration that cannot serve answers 500, a store that cannot open
# 503, and the log says which file; nothing stored).
# store: LMDB only

fifo pipe/secret
fifo pipe/keys
fifo fifodb/data.mdb

env IDEM_SECRET_FILE={tmp}/pipe/secret
run: idem-fcgi --check-config
  exit: 1
  prints: not a regular file
request fifo-secret: POST /payments
  as alice
  Idempotency-Key: "fifo-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 500
  problem: internal-error
env IDEM_SECRET_FILE={tmp}/secret

env IDEM_KEYS_FILE={tmp}/pipe/keys
run: idem-fcgi --check-config
  exit: 1
  prints: not a regular file
request fifo-keys: like fifo-secret
expect: 500
  problem: internal-error
env IDEM_KEYS_FILE={tmp}/keys

env IDEM_DB_DIR={tmp}/fifodb
run: idem-fcgi --check-config
  exit: 1
  prints: not a regular file
env IDEM_PROVIDER_DB={tmp}/fifodb
run: idem-provider --check-config
  exit: 1
  prints: not a regular file
unset IDEM_PROVIDER_DB
request fifo-store: like fifo-secret
expect: 503
  problem: store-unavailable
  stderr-has: not available yet (invalid argument
env IDEM_DB_DIR={tmp}/db

# The files themselves again: a payment goes through.
request ok: like fifo-secret
  Idempotency-Key: "fifo-2"
expect: 201
check: keys=1 payments=1 charges=1
