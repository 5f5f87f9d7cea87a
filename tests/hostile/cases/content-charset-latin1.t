# A body declared ISO 8859-1 whose currency holds a Latin-1 byte (C9): the
# parameter is ignored, the body is not UTF-8, 400 malformed-json.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-charset-latin1"
  Content-Type: application/json; charset=iso-8859-1
  body: {"amount": 100.00, "currency": "BR{byte:c9}"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
