# Contract row "body not JSON where JSON is required" and invariant 7: a
# multi-byte sequence cut short by the closing quote (E2 82 then "): 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-truncated-utf8"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL{byte:e2}{byte:82}"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
