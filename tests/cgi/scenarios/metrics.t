# DESIGN.md lists GET /metrics in the Prometheus text format (claims,
# replays, 409s, 422s, ...).  After some traffic it answers 200 text/plain
# with at least one "# TYPE" line.

request create: POST /payments
  as alice
  Idempotency-Key: "m-1"
  Content-Type: application/json
  body: {"amount": 1.00, "currency": "BRL"}
expect: 201

request replay: like create
expect: 201
  replay-of: create

request metrics: GET /metrics
  as alice
expect: 200
  Content-Type: ~ text/plain(;.*)?
  body: {any}# TYPE {any}
