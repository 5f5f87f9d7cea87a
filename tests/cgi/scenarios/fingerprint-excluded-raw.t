# Fingerprint exclusions under IDEM_FINGERPRINT=raw: the body's bytes are
# hashed with each excluded member's span removed, with its separator, so
# a retry that changes, adds or drops only "client_timestamp" or
# "trace_id" replays when the rest of its bytes are the same; any other
# byte still counts (422).

env IDEM_FINGERPRINT=raw

request first: POST /payments
  as alice
  Idempotency-Key: "fp-r1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

request added-last: like first
  body: {"amount": 100.00, "currency": "BRL", "trace_id": "4bf92f3577b34da6"}
expect: 201
  replay-of: first

request added-first: like first
  body: {"client_timestamp": 1764673205000, "amount": 100.00, "currency": "BRL"}
expect: 201
  replay-of: first

request added-middle: like first
  body: {"amount": 100.00, "trace\u005fid": "x\\", "currency": "BRL"}
expect: 201
  replay-of: first

request smuggle-value: like first
  body: {"amount": 100.00, "currency": "BRL", "trace_id": "\", \"amount\": 1.00"}
expect: 201
  replay-of: first

request other-spacing: like first
  body: {"amount":100.00, "currency": "BRL", "trace_id": "x"}
expect: 422
  problem: key-reused

request reordered: like first
  body: {"currency": "BRL", "amount": 100.00, "trace_id": "x"}
expect: 422
  problem: key-reused
check: keys=1 payments=1 charges=1
