# Contract row "body not JSON where JSON is required" and invariant 7: A
# currency in Latin-1 (BR then C9, an E-acute in ISO 8859-1, invalid as
# UTF-8): 400 malformed-json.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-currency-latin1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BR{byte:c9}"}
expect: 400
  problem: malformed-json
  utf8-body
check: keys=0 payments=0 charges=0
