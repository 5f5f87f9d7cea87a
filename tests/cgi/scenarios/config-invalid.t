# A malformed configuration value stops the responder before it touches
# anything: no store is made.  Run as CGI, the client still gets a problem
# (500) rather than the web server's error page, and the detail does not
# leak the reason (which goes to the log, naming the variable).  Its
# Request-Id (here the web server's own, REQUEST_ID) is on the log's
# line too, as on every answer.

snapshot empty

request first: POST /payments
  as alice
  Idempotency-Key: "cfg-1"
  Content-Type: application/json
  env IDEM_LEASE=abc
  body: {"amount": 100.00, "currency": "BRL"}
expect: 500
  problem: internal-error
  no Location
  Request-Id: {rid:req}
  stderr-has: IDEM_LEASE
  stderr-has: rid={rid}{byte:0a}

request lease-not-shorter: like first
  env IDEM_LEASE=90000
  env IDEM_TTL=3600
  env REQUEST_ID=checkout-cfg-2
expect: 500
  problem: internal-error
  Request-Id: checkout-cfg-2
  stderr-has: rid=checkout-cfg-2{byte:0a}

# Nothing was created, so nothing was charged, and the same key works
# once the service is fixed.
unchanged empty
ctl: stats
  exit: 1
  prints: no store there

request fixed: like first
  unset IDEM_LEASE
expect: 201
check: charges=1
