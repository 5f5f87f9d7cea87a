# Contract row "body not JSON where JSON is required" and invariant 7: A
# currency with a byte that is not UTF-8 (BR then FF): RFC 8259 section 8.1
# makes the whole body not JSON, so 400 malformed-json before the store, and
# the problem body is valid UTF-8.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-currency-invalid-utf8"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BR{byte:ff}"}
expect: 400
  problem: malformed-json
  utf8-body
check: keys=0 payments=0 charges=0
