# Invariant 9, /healthz: a load balancer keeps sending requests to a worker
# whose health check says 200, so the check reads the store.  When every
# read fails (fault points store_lookup, store_get, store_scan, store_each
# and store_count, as an I/O error would), /healthz is the 503 every other
# endpoint would give, never {"status": "ok"}.

request first: POST /payments
  as alice
  Idempotency-Key: "hz-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

request health: GET /healthz
expect: 200
  json: {"status": "ok"}

request sick: like health
  env IDEM_FAULT=store_lookup:fail,store_get:fail,store_scan:fail,store_each:fail,store_count:fail
expect: 503
  problem: store-unavailable
  Retry-After: ~ [1-9][0-9]*

request well: like health
expect: 200
  json: {"status": "ok"}
