# Contract row "body not JSON where JSON is required" and invariant 7: A
# currency "BRL\u0000junk": read as a C string it would be BRL and charged.
# \u0000 is refused at the edge: 400 malformed-json, nothing stored, nothing
# charged.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-currency-nul-escape"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL\u0000junk"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
