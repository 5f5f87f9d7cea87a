# Invariant 7: dot segments and extra slashes in a refunds path are not
# resolved: 404 (or 405 for POST on a single refund), nothing claimed.

request pay: POST /payments
  as alice
  Idempotency-Key: "pay-h"
  Content-Type: application/json
  body: {"amount": 50.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request dots: GET /payments/{id}/refunds/../../{id}
  as alice
expect: 404
  problem: not-found

request slash: POST /payments/{id}/refunds/
  as alice
  Idempotency-Key: "h-3"
  Content-Type: application/json
  body: {}
expect: 405
  problem: method-not-allowed
  Allow: GET, HEAD

request put: PUT /payments/{id}/refunds
  as alice
expect: 405
  problem: method-not-allowed
  Allow: GET, HEAD, POST
check: keys=1 refunds=0
