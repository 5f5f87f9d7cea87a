# Contract row "body not JSON where JSON is required" and invariant 7: a raw
# control character (0x01) inside a string: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-raw-control"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BR{byte:01}L"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
