# Invariant 9, idemctl(8): a command whose read of the store fails (fault
# points store_each, store_count, store_lookup, as an I/O error would)
# exits 1 with the error, and prints no counts: never zeros for stats,
# never "absent" for a key that is stored, never an empty list of stuck
# claims.

request first: POST /payments
  as alice
  Idempotency-Key: "csr-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

env IDEM_FAULT=store_each:fail
ctl: stats
  exit: 1
  prints: idemctl: store input/output error
ctl: stuck
  exit: 1
  prints: idemctl: store input/output error
ctl: resume
  exit: 1
  prints: idemctl: resume: store input/output error
env IDEM_FAULT=store_count.payments:fail
ctl: stats
  exit: 1
  prints: idemctl: store input/output error
env IDEM_FAULT=store_lookup:fail
ctl: inspect acct_alice csr-1
  exit: 1
  prints: idemctl: store input/output error
ctl: --json inspect acct_alice csr-1
  exit: 1
  prints: idemctl: store input/output error
unset IDEM_FAULT

ctl: inspect acct_alice csr-1
  prints: state: completed
ctl: stats
  prints: payments: 1
