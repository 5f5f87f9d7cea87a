# idem-fcgi(8) and idem-provider(8): --check-config reads the whole
# configuration as a start does, with the same parsers, says what it
# found or the first error (naming the variable), and exits 0 or 1; an
# unknown option is a usage error, exit 2.  It creates, opens for writing
# or changes nothing: no state directory (the one named, nor the default
# one when none is), no store.
# store: LMDB only

env IDEM_DB_DIR={tmp}/state/db
env IDEM_PROVIDER_DIR={tmp}/state/provider
env IDEM_PROVIDER_DB={tmp}/state/provider-service
file not-a-dir
snapshot empty

run: idem-fcgi --check-config
  prints: idem-fcgi: configuration ok
  prints: store: {tmp}/state/db
  prints: keys file: {tmp}/keys
  prints: secret file: {tmp}/secret
  prints: provider: simulated
run: idem-provider --check-config
  prints: idem-provider: configuration ok
  prints: store: {tmp}/state/provider-service

# The defaults when nothing names the stores: still nothing created.
unset IDEM_DB_DIR
unset IDEM_PROVIDER_DB
run: idem-fcgi --check-config
  prints: /lib/idem/db
run: idem-provider --check-config
  prints: /lib/idem/provider-service
env IDEM_DB_DIR={tmp}/state/db
env IDEM_PROVIDER_DB={tmp}/state/provider-service

# IDEM_REPLAY_CACHE: bytes, with K, M or G; 16M unset; 0 for none.
run: idem-fcgi --check-config
  prints: replay cache: 16777216 bytes a worker
env IDEM_REPLAY_CACHE=4M
run: idem-fcgi --check-config
  prints: replay cache: 4194304 bytes a worker
env IDEM_REPLAY_CACHE=0
run: idem-fcgi --check-config
  prints: replay cache: none
env IDEM_REPLAY_CACHE=4Q
run: idem-fcgi --check-config
  exit: 1
  prints: IDEM_REPLAY_CACHE
unset IDEM_REPLAY_CACHE

# The first error, naming the variable at fault: exit 1.
env IDEM_LEASE=abc
run: idem-fcgi --check-config
  exit: 1
  prints: IDEM_LEASE
unset IDEM_LEASE
env IDEM_PROVIDER_THREADS=many
run: idem-provider --check-config
  exit: 1
  prints: IDEM_PROVIDER_THREADS
unset IDEM_PROVIDER_THREADS
unset IDEM_PROVIDER
run: idem-fcgi --check-config
  exit: 1
  prints: IDEM_PROVIDER
env IDEM_PROVIDER=simulated

# A file it names must open for reading: a missing one is an error.
env IDEM_SECRET_FILE={tmp}/no-such-secret
run: idem-fcgi --check-config
  exit: 1
  prints: no-such-secret
env IDEM_SECRET_FILE={tmp}/secret
env IDEM_KEYS_FILE={tmp}/no-such-keys
run: idem-fcgi --check-config
  exit: 1
  prints: IDEM_KEYS_FILE
env IDEM_KEYS_FILE={tmp}/keys
env IDEM_DB_DIR={tmp}/not-a-dir
run: idem-fcgi --check-config
  exit: 1
  prints: IDEM_DB_DIR
env IDEM_PROVIDER_DB={tmp}/not-a-dir
run: idem-provider --check-config
  exit: 1
  prints: IDEM_PROVIDER_DB
env IDEM_DB_DIR={tmp}/state/db
env IDEM_PROVIDER_DB={tmp}/state/provider-service

run: idem-fcgi --check-config --bogus
  exit: 2
  prints: usage: idem-fcgi
unchanged empty

# Once the store exists it is found and opened for reading only: its
# files keep their size and nothing is added beside them.
request first: POST /payments
  as alice
  Idempotency-Key: "check-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
snapshot served
run: idem-fcgi --check-config
  prints: idem-fcgi: configuration ok
  prints: store: {tmp}/state/db
unchanged served
