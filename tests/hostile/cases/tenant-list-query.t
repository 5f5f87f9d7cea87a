# Invariant 4, isolation: query parameters naming another account do not
# widen bob's list: they are no parameters of the list, refused by name.

request alice: POST /payments
  as alice
  Idempotency-Key: "h-tenant-list"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

request bob: GET /payments?account=acct_alice&scope=acct_alice&limit=100
  as bob
expect: 400
  problem: bad-request
  json: {"type": "{any}", "title": "{any}", "status": 400, "detail": "Unknown query parameter: account, scope. This list takes limit, starting_after and ending_before.", "instance": "{any}"}

request bob-list: GET /payments?limit=100
  as bob
expect: 200
  json: {"data": [], "has_more": false}
check: keys=1 payments=1 charges=1
