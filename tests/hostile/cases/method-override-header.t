# A GET with X-HTTP-Method-Override: POST and a payment body is still a GET:
# the list, nothing created.

request hostile: GET /payments
  as alice
  Idempotency-Key: "h-override"
  Content-Type: application/json
  X-HTTP-Method-Override: POST
  X-Method-Override: POST
  body: {"amount": 100.00, "currency": "BRL"}
expect: 200
  json: {"data": [], "has_more": false}
check: keys=0 payments=0 charges=0
