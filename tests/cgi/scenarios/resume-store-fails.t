# Invariant 9, idemctl resume (the completer): a claim it could not take
# over (fault point store_claim) or whose answer it could not store
# (store_complete) is a write that failed: the run stops there and exits 1
# with the store's error, never exit 0 as if the claim were merely left
# for a provider that did not answer.  The claim keeps its recovery point,
# and the next run completes it with the original charge.

env IDEM_LEASE=30
env IDEM_TEST_NOW_MS=1796042096789

request first: POST /payments
  as alice
  Idempotency-Key: "rsf-1"
  Content-Type: application/json
  env IDEM_PROVIDER_FAIL=timeout
  body: {"amount": 100.00, "currency": "BRL"}
expect: 504
  problem: provider-timeout
check: keys=1 in_progress=1 payments=0 charges=1

env IDEM_FAULT=store_claim:fail
ctl: resume
  exit: 1
  prints: idemctl: resume: store is full
env IDEM_FAULT=store_complete:fail
ctl: resume
  exit: 1
  prints: idemctl: resume: store is full
unset IDEM_FAULT
check: keys=1 in_progress=1 payments=0 charges=1

ctl: resume
  prints: completed: 1
check: keys=1 completed=1 payments=1 charges=1

request retry: like first
  unset IDEM_PROVIDER_FAIL
expect: 201
  Idempotent-Replayed: true
  Location: /payments/{id}
check: keys=1 completed=1 payments=1 charges=1
