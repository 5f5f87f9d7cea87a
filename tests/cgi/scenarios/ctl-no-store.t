# Invariant 9: a tool pointed at a store that does not exist fails and
# creates nothing.  idemctl(8): exit status 1 when the store cannot be
# opened.  Every command that reads or changes the store says which
# directory holds no store, and the scenario directory is as it was: no
# directory, no lock file, no counters file made.  Only the responder
# creates a store.
# store: LMDB only

snapshot empty
ctl: stats
  exit: 1
  prints: store {tmp}/db: no store there
ctl: -d {tmp}/nowhere/x stats
  exit: 1
  prints: store {tmp}/nowhere/x: no store there
ctl: stuck
  exit: 1
  prints: no store there
ctl: purge
  exit: 1
  prints: no store there
ctl: resume
  exit: 1
  prints: no store there
ctl: inspect acct_alice nokey-1
  exit: 1
  prints: no store there
ctl: rekey
  exit: 1
  prints: no store there
unchanged empty

# Once the responder has made the store, the same commands work on it,
# and a key that is in the store is found.
request first: POST /payments
  as alice
  Idempotency-Key: "nokey-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
ctl: inspect acct_alice nokey-1
  prints: state: completed
ctl: stats
  prints: keys: 1
ctl: stuck
ctl: purge
  prints: purged: 0
ctl: resume
  prints: seen: 0

# A store elsewhere still does not exist, and is still not made.
snapshot made
ctl: -d {tmp}/nowhere/x inspect acct_alice nokey-1
  exit: 1
  prints: store {tmp}/nowhere/x: no store there
unchanged made
