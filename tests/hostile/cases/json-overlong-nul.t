# Contract row "body not JSON where JSON is required" and invariant 7: the
# overlong form of NUL (C0 80): 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-overlong-nul"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL{byte:c0}{byte:80}"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
