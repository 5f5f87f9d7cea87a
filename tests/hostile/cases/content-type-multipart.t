# Contract row "body not JSON where JSON is required": a multipart form with
# a JSON-looking part: 415, nothing stored.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-type-multipart"
  Content-Type: multipart/form-data; boundary=x
  body: {"amount": 100.00, "currency": "BRL"}
expect: 415
  problem: unsupported-media-type
check: keys=0 payments=0 charges=0
