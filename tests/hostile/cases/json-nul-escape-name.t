# Contract row "body not JSON where JSON is required" and invariant 7:
# \u0000 in a member name: "amount\u0000" must not be read as "amount" (or
# as an unknown member): 400 malformed-json, nothing stored.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-nul-escape-name"
  Content-Type: application/json
  body: {"amount\u0000": 100.00, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
