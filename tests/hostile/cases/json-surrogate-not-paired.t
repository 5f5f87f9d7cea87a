# Contract row "body not JSON where JSON is required" and invariant 7: a
# high surrogate followed by an escape that is not a low surrogate
# (\ud800\u0041): 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-surrogate-not-paired"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "\ud800\u0041"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
