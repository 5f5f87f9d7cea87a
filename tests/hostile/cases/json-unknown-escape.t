# Contract row "body not JSON where JSON is required" and invariant 7: \x41
# is not a JSON escape: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-unknown-escape"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "\x42RL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
