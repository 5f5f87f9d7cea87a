# Invariant 9: a program with no provider configured refuses to run, and a
# simulator is never a default.  Without IDEM_PROVIDER_URL (the provider
# service) or IDEM_PROVIDER=simulated (the in-process simulator) the
# responder stops at start, naming both settings in its log, before it
# touches the store: the scenario directory is as it was.  Contradictory
# or unknown settings stop it the same way.  idemctl resume and stats,
# which call the provider, refuse likewise with exit status 1, and the
# claim that resume would have ended is left as it was.

unset IDEM_PROVIDER
snapshot empty

request first: POST /payments
  as alice
  Idempotency-Key: "prov-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 500
  problem: internal-error
  stderr-has: IDEM_PROVIDER_URL
  stderr-has: IDEM_PROVIDER=simulated
unchanged empty

request unknown: like first
  env IDEM_PROVIDER=sandbox
expect: 500
  problem: internal-error
  stderr-has: IDEM_PROVIDER must be
unchanged empty

request both: like first
  env IDEM_PROVIDER=simulated
  env IDEM_PROVIDER_URL=http://127.0.0.1:9
expect: 500
  problem: internal-error
  stderr-has: IDEM_PROVIDER_URL
unchanged empty

request service-no-url: like first
  env IDEM_PROVIDER=service
expect: 500
  problem: internal-error
  stderr-has: IDEM_PROVIDER_URL
unchanged empty

# A claim that may have charged, left by a worker killed after the charge.
env IDEM_PROVIDER=simulated
env IDEM_LEASE=10
request crash: like first
  env IDEM_FAULT=after_charge:kill
expect: killed
check: in_progress=1 payments=0 charges=1

unset IDEM_PROVIDER
snapshot stuck
ctl: resume --all
  exit: 1
  prints: IDEM_PROVIDER_URL
  prints: IDEM_PROVIDER=simulated
ctl: stats
  exit: 1
  prints: IDEM_PROVIDER_URL
unchanged stuck

env IDEM_PROVIDER=simulated
check: in_progress=1 payments=0 charges=1
