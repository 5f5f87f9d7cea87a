# Contract row "body not JSON where JSON is required": */* names no media
# type: 415, nothing stored.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-type-wildcard"
  Content-Type: */*
  body: {"amount": 100.00, "currency": "BRL"}
expect: 415
  problem: unsupported-media-type
check: keys=0 payments=0 charges=0
