# Check order: body size (413) before media type (415) before JSON (400).

env IDEM_BODY_LIMIT=1024

request big-text: POST /payments
  as alice
  Idempotency-Key: "ord-1"
  Content-Type: text/plain
  body: {"amount": 100.00, "currency": "BRL"}
  pad-body-to: 2000
expect: 413
  problem: body-too-large

request text-broken: like big-text
  body: {"amount":
  pad-body-to: 20
expect: 415
  problem: unsupported-media-type
check: keys=0 payments=0 charges=0
