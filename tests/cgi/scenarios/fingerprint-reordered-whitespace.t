# The canonical fingerprint (the default): a retry that re-serialises the
# same payload, members reordered and white space changed, is the same
# request: a replay, not 422.

request first: POST /payments
  as alice
  Idempotency-Key: "fp-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

request reordered: like first
  body: {"currency":"BRL","amount":100.00}
expect: 201
  replay-of: first

request spaced: like first
  body <<END
  {
      "currency" :   "BRL" ,
      "amount"   :   100.00
  }
  END
expect: 201
  replay-of: first
check: keys=1 payments=1 charges=1
