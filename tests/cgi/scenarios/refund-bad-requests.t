# Refunds, the 400s before and after the claim: no key, a malformed key,
# malformed JSON (not stored), and invalid amounts (zero, negative, too
# many decimals, not a number, an unknown member): stored 400
# invalid-refund, replayed.  Nothing is refunded.

request pay: POST /payments
  as alice
  Idempotency-Key: "pay-r5"
  Content-Type: application/json
  body: {"amount": 50.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request no-key: POST /payments/{id}/refunds
  as alice
  Content-Type: application/json
  body: {"amount": 1.00}
expect: 400
  problem: missing-key

request bad-key: like no-key
  Idempotency-Key: "unterminated
expect: 400
  problem: invalid-key

request malformed: like no-key
  Idempotency-Key: "refund-bad-json"
  body: {"amount": 
expect: 400
  problem: malformed-json
check: keys=1

request zero: like no-key
  Idempotency-Key: "refund-zero"
  body: {"amount": 0}
expect: 400
  problem: invalid-refund

request zero-retry: like zero
expect: 400
  replay-of: zero

request negative: like no-key
  Idempotency-Key: "refund-neg"
  body: {"amount": -1.00}
expect: 400
  problem: invalid-refund

request decimals: like no-key
  Idempotency-Key: "refund-dec"
  body: {"amount": 1.001}
expect: 400
  problem: invalid-refund

request string: like no-key
  Idempotency-Key: "refund-str"
  body: {"amount": "1.00"}
expect: 400
  problem: invalid-refund

request currency: like no-key
  Idempotency-Key: "refund-cur"
  body: {"amount": 1.00, "currency": "BRL"}
expect: 400
  problem: invalid-refund

request array: like no-key
  Idempotency-Key: "refund-arr"
  body: [1]
expect: 400
  problem: invalid-refund

request media: like no-key
  Idempotency-Key: "refund-media"
  Content-Type: text/plain
expect: 415
  problem: unsupported-media-type
check: refunds=0 provider_refunds=0

request get: GET /payments/{id}
  as alice
expect: 200
  body-of: pay
