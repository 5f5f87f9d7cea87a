# The default body limit is 64 KiB (65536 bytes).

request big: POST /payments
  as alice
  Idempotency-Key: "big-2"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
  pad-body-to: 65537
expect: 413
  problem: body-too-large

request exact: like big
  pad-body-to: 65536
expect: 201
check: keys=1 payments=1 charges=1
