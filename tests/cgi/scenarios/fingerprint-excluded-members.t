# Fingerprint exclusions (the route table's fp_ignore, listed on the
# policy page): POST /payments leaves "client_timestamp" and "trace_id",
# top-level members about the attempt rather than the payment, out of the
# fingerprint.  A retry that changes, adds or drops only them replays the
# stored answer; one that changes anything else is a 422.

request first: POST /payments
  as alice
  Idempotency-Key: "fp-x1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL", "client_timestamp": "2026-12-02T11:00:00.000Z", "trace_id": "4bf92f3577b34da6"}
expect: 201
  Location: /payments/{id}
  json: {"id": "{id:pay}", "amount": 100.00, "currency": "BRL", "status": "succeeded", "charge_id": "{any}", "created_at": "{any}"}
check: keys=1 payments=1 charges=1

request later-clock: like first
  body: {"amount": 100.00, "currency": "BRL", "client_timestamp": "2026-12-02T11:00:05.000Z", "trace_id": "a3ce929d0e0e4736"}
expect: 201
  replay-of: first

request dropped: like first
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  replay-of: first

request one-dropped: like first
  body: {"trace_id": "a3ce929d0e0e4736", "currency": "BRL", "amount": 100.00}
expect: 201
  replay-of: first

# Any JSON value, and a name written with escapes is the same member.
request escaped-name: like first
  body: {"amount": 100.00, "currency": "BRL", "client\u005ftimestamp": 1764673205000, "trace_id": {"span": [1, 2]}}
expect: 201
  replay-of: first

# A value that looks like members is one string: nothing is smuggled.
request smuggle-value: like first
  body: {"amount": 100.00, "currency": "BRL", "trace_id": "\", \"amount\": 1.00"}
expect: 201
  replay-of: first

request other-amount: like first
  body: {"amount": 100.01, "currency": "BRL", "client_timestamp": "2026-12-02T11:00:00.000Z", "trace_id": "4bf92f3577b34da6"}
expect: 422
  problem: key-reused

# Only the top level: the same names inside another member count.
request nested: like first
  body: {"amount": 100.00, "currency": "BRL", "metadata": {"trace_id": "x"}}
expect: 422
  problem: key-reused

# Near names are other members.
request near-name: like first
  body: {"amount": 100.00, "currency": "BRL", "trace_id ": "x"}
expect: 422
  problem: key-reused

request upper-name: like first
  body: {"amount": 100.00, "currency": "BRL", "Trace_id": "x"}
expect: 422
  problem: key-reused

# Twice the same excluded name is refused before the store, as any
# duplicate: two parsers could disagree on which one counts.
request duplicate: like first
  body: {"amount": 100.00, "currency": "BRL", "trace_id": "a", "trace\u005fid": "b"}
expect: 400
  problem: malformed-json
check: keys=1 payments=1 charges=1

# Any other unknown member is still refused, under a new key.
request unknown: like first
  Idempotency-Key: "fp-x2"
  body: {"amount": 100.00, "currency": "BRL", "trace": "x"}
expect: 400
  problem: invalid-payment

# The excluded members are not stored: the payment reads as before.
request read: GET /payments/{id}
  as alice
expect: 200
  json: {"id": "{id}", "amount": 100.00, "currency": "BRL", "status": "succeeded", "charge_id": "{any}", "created_at": "{any}"}
