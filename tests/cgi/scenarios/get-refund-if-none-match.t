# GET /payments/{id}/refunds/{rid} carries the ETag the refund's 201 had, and
# a conditional GET with it is 304 Not Modified without a body, as a
# payment's GET is (RFC 9110 13.1.2, 15.4.5); another ETag gets the refund.

request pay: POST /payments
  as alice
  Idempotency-Key: "inm-r-pay"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request refund: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "inm-r-refund"
  Content-Type: application/json
  body: {"amount": 10.00}
expect: 201
  Location: /payments/{id}/refunds/{rid}
  ETag: "{etag:hex16}"

request get: GET /payments/{id}/refunds/{rid}
  as alice
expect: 200
  ETag: "{etag}"
  body-of: refund

request conditional: GET /payments/{id}/refunds/{rid}
  as alice
  If-None-Match: "{etag}"
expect: 304
  ETag: "{etag}"
  body:

request any: GET /payments/{id}/refunds/{rid}
  as alice
  If-None-Match: *
expect: 304
  ETag: "{etag}"
  body:

request other-etag: GET /payments/{id}/refunds/{rid}
  as alice
  If-None-Match: "0000000000000000"
expect: 200
  ETag: "{etag}"
  body-of: refund

request other-account: GET /payments/{id}/refunds/{rid}
  as bob
  If-None-Match: "{etag}"
expect: 404
