# Invariant 7: payment and refund ids far longer than an id can be, on
# every refunds route: 404, nothing claimed.

request post: POST /payments/pay_{repeat:4000:a}/refunds
  as alice
  Idempotency-Key: "h-2"
  Content-Type: application/json
  body: {}
expect: 404
  problem: not-found

request list: GET /payments/pay_{repeat:4000:a}/refunds
  as alice
expect: 404
  problem: not-found

request one: GET /payments/pay_000000000000000000000000/refunds/re_{repeat:4000:f}
  as alice
expect: 404
  problem: not-found
check: keys=0
