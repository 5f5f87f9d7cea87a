# Contract row "body not JSON where JSON is required": text/json is not
# application/json: 415, nothing stored.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-type-text-json"
  Content-Type: text/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 415
  problem: unsupported-media-type
check: keys=0 payments=0 charges=0
