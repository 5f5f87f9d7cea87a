# Contract row "body not JSON where JSON is required": a non-JSON media type
# is 415, not stored; a retry with the right type and the same key is 201.

request text: POST /payments
  as alice
  Idempotency-Key: "mt-1"
  Content-Type: text/plain
  body: {"amount": 100.00, "currency": "BRL"}
expect: 415
  problem: unsupported-media-type
check: keys=0 payments=0 charges=0

request form: like text
  Content-Type: application/x-www-form-urlencoded
  body: amount=100.00&currency=BRL
expect: 415
  problem: unsupported-media-type

request fixed: like text
  Content-Type: application/json
expect: 201
  no Idempotent-Replayed
check: keys=1 payments=1 charges=1
