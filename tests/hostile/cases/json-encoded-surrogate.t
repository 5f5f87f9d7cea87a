# Contract row "body not JSON where JSON is required" and invariant 7: RFC
# 3629 section 3: a surrogate encoded directly in UTF-8 (ED A0 80) is
# ill-formed: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-encoded-surrogate"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL{byte:ed}{byte:a0}{byte:80}"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
