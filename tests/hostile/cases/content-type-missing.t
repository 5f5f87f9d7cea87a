# Contract row "body not JSON where JSON is required": no Content-Type at
# all: 415, nothing stored.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-type-missing"
  body: {"amount": 100.00, "currency": "BRL"}
expect: 415
  problem: unsupported-media-type
check: keys=0 payments=0 charges=0
