# IDEM_AUTH is "bearer" or "remote-user" and nothing else: any other value
# stops the responder at start (a 500 problem under CGI, the reason in the
# log), rather than guessing a mode.  The same for an IDEM_METRICS_ACCOUNT
# that is not a valid principal.

request first: POST /payments
  as alice
  env IDEM_AUTH=remote_user
  Idempotency-Key: "mode-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 500
  problem: internal-error

request upper: like first
  env IDEM_AUTH=Bearer
expect: 500
  problem: internal-error

request both: like first
  env IDEM_AUTH=bearer,remote-user
expect: 500
  problem: internal-error

request metrics-account: like first
  unset IDEM_AUTH
  env IDEM_METRICS_ACCOUNT=ops team
expect: 500
  problem: internal-error
# No responder started: no store, so no key and no charge.
ctl: stats
  exit: 1
  prints: no store there

request fixed: like metrics-account
  unset IDEM_METRICS_ACCOUNT
  env IDEM_AUTH=bearer
expect: 201
check: keys=1 charges=1
