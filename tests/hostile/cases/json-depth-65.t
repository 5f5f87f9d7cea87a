# Contract row "body not JSON where JSON is required" and invariant 7: the
# parser's depth bound is 64 containers; an object holding 64 nested arrays
# is 65 deep: 400 malformed-json, nothing stored (json-depth-64 shows the
# limit itself).

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-depth-65"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL", "x": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
