# Contract row "body not JSON where JSON is required" and invariant 7: the
# overlong two-byte form of / (C0 AF), the classic path-traversal disguise:
# 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-overlong-slash"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL{byte:c0}{byte:af}"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
