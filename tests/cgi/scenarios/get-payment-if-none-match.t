# GET /payments/{id} carries the same ETag as the 201, and a conditional GET
# with that ETag is 304 Not Modified without a body (RFC 9110 13.1.2, 15.4.5).

request create: POST /payments
  as alice
  Idempotency-Key: "inm-1"
  Content-Type: application/json
  body: {"amount": 1.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}
  ETag: "{etag:hex16}"

request get: GET /payments/{id}
  as alice
expect: 200
  ETag: "{etag}"
  body-of: create

request conditional: GET /payments/{id}
  as alice
  If-None-Match: "{etag}"
expect: 304
  ETag: "{etag}"
  body:

request other-etag: GET /payments/{id}
  as alice
  If-None-Match: "0000000000000000"
expect: 200
  body-of: create
