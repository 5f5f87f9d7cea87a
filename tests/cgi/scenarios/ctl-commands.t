# idemctl(8): a command it does not know is a usage error that names it
# (exit 2), and purge honours --json, before or after the command, as
# stats, resume, inspect and stuck do.

ctl: frobnicate
  exit: 2
  prints: idemctl: unknown command "frobnicate"
ctl: --json frobnicate now
  exit: 2
  prints: idemctl: unknown command "frobnicate"

request first: POST /payments
  as alice
  Idempotency-Key: "ctl-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

ctl: purge --json
  prints: {"purged":0,"interrupted":false}
ctl: --json purge
  prints: {"purged":0,"interrupted":false}
ctl: purge
  prints: purged: 0
