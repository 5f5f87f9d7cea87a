# Contract row "body not JSON where JSON is required" and invariant 7: a
# three-byte overlong form (E0 80 AF): 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-overlong-three-byte"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL{byte:e0}{byte:80}{byte:af}"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
