# Invariant 10 across lifetimes: a key reused with the same body after its
# TTL is a new payment with a new charge (its first lifetime ended, and
# the key's generation counts it), and a claim of that second lifetime
# lost after the provider charged is still charged once: the retry derives
# the second lifetime's provider key, not the first one's (which would
# answer with the first payment's charge) nor a third.

env IDEM_TTL=60

request first: POST /payments
  as alice
  Idempotency-Key: "lost-2"
  Content-Type: application/json
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  body: {"id":"{id1:pay}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{c1:ch}","created_at":"{any}"}
check: payments=1 charges=1

# Past its TTL the record is purged: the key's first lifetime ends.
env IDEM_TEST_NOW_MS=1796042157790
ctl: purge
  prints: purged: 1
check: keys=0 payments=1 charges=1

request second: like first
  env IDEM_TEST_NOW_MS=1796042157790
  env IDEM_FAULT=after_charge:kill
expect: killed
check: in_progress=1 payments=1 charges=2

run: tests/cgi/claimctl lose acct_alice lost-2

request retry: like first
  env IDEM_TEST_NOW_MS=1796042160000
expect: 201
  no Idempotent-Replayed
  body: {"id":"{id2:pay}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{c2:ch}","created_at":"{any}"}
check: completed=1 payments=2 charges=2

# The second lifetime's charge is held by exactly one payment: listing
# the account shows the two payments, each with its own charge.
request list: GET /payments
  as alice
expect: 200
  json: {"data":[{"id":"{id2}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{c2}","created_at":"{any}"},{"id":"{id1}","amount":100.00,"currency":"BRL","status":"succeeded","charge_id":"{c1}","created_at":"{any}"}],"has_more":false}
