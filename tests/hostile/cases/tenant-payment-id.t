# Invariant 4, isolation: bob asking for alice's payment by its id gets 404,
# exactly as for an id that does not exist, and so does a conditional GET
# with alice's ETag: a 304 would confirm the payment exists.

request alice: POST /payments
  as alice
  Idempotency-Key: "h-tenant-id"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}
  ETag: "{etag:hex16}"

request bob: GET /payments/{id}
  as bob
expect: 404
  problem: not-found
  no ETag

request bob-etag: GET /payments/{id}
  as bob
  If-None-Match: "{etag}"
expect: 404
  problem: not-found
  no ETag

request bob-star: GET /payments/{id}
  as bob
  If-None-Match: *
expect: 404
  problem: not-found
check: keys=1 payments=1 charges=1
