# GET /payments pages with Stripe's cursors (doc/DESIGN.md, "Lists and
# their cursors"): starting_after gives the payments just older than the
# one it names, ending_before those just newer, newest first either way,
# has_more whether more lie that way.  A payment made while a client
# pages is newer than every page it has read: the next page neither
# shifts nor repeats.  A cursor that is no payment of the caller's, both
# cursors at once, or a parameter the list does not take is a 400.

request p1: POST /payments
  as alice
  Idempotency-Key: "cur-1"
  Content-Type: application/json
  env IDEM_TEST_NOW_MS=1796042096000
  body: {"amount": 1.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id1}

request p2: like p1
  Idempotency-Key: "cur-2"
  env IDEM_TEST_NOW_MS=1796042097000
  body: {"amount": 2.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id2}

request p3: like p1
  Idempotency-Key: "cur-3"
  env IDEM_TEST_NOW_MS=1796042098000
  body: {"amount": 3.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id3}

request bob: like p1
  as bob
  Idempotency-Key: "cur-b"
  env IDEM_TEST_NOW_MS=1796042099000
  body: {"amount": 4.00, "currency": "BRL"}
expect: 201
  Location: /payments/{idb}

request first: GET /payments?limit=1
  as alice
expect: 200
  json: {"data": [{"id": "{id3}", "amount": 3.00, "currency": "BRL", "status": "succeeded", "charge_id": "{any}", "created_at": "{any}"}], "has_more": true}

request p4: like p1
  Idempotency-Key: "cur-4"
  env IDEM_TEST_NOW_MS=1796042100000
  body: {"amount": 5.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id4}

request second: GET /payments?limit=1&starting_after={id3}
  as alice
expect: 200
  json: {"data": [{"id": "{id2}", "amount": 2.00, "currency": "BRL", "status": "succeeded", "charge_id": "{any}", "created_at": "{any}"}], "has_more": true}

request rest: GET /payments?starting_after={id2}
  as alice
expect: 200
  json: {"data": [{"id": "{id1}", "amount": 1.00, "currency": "BRL", "status": "succeeded", "charge_id": "{any}", "created_at": "{any}"}], "has_more": false}

request back: GET /payments?ending_before={id1}&limit=2
  as alice
expect: 200
  json: {"data": [{"id": "{id3}", "amount": 3.00, "currency": "BRL", "status": "succeeded", "charge_id": "{any}", "created_at": "{any}"}, {"id": "{id2}", "amount": 2.00, "currency": "BRL", "status": "succeeded", "charge_id": "{any}", "created_at": "{any}"}], "has_more": true}

request back-one: GET /payments?ending_before={id1}&limit=1
  as alice
expect: 200
  json: {"data": [{"id": "{id2}", "amount": 2.00, "currency": "BRL", "status": "succeeded", "charge_id": "{any}", "created_at": "{any}"}], "has_more": true}

request back-all: GET /payments?limit=5&ending_before={id2}
  as alice
expect: 200
  json: {"data": [{"id": "{id4}", "amount": 5.00, "currency": "BRL", "status": "succeeded", "charge_id": "{any}", "created_at": "{any}"}, {"id": "{id3}", "amount": 3.00, "currency": "BRL", "status": "succeeded", "charge_id": "{any}", "created_at": "{any}"}], "has_more": false}

request newest: GET /payments?ending_before={id4}
  as alice
expect: 200
  json: {"data": [], "has_more": false}

request others: GET /payments?starting_after={idb}
  as alice
expect: 400
  problem: bad-request
  json: {"type": "{any}", "title": "{any}", "status": 400, "detail": "starting_after names none of these payments.", "instance": "{any}"}

request both: GET /payments?starting_after={id3}&ending_before={id1}
  as alice
expect: 400
  problem: bad-request

request unknown: GET /payments?limit=2&startingafter={id3}&page=2
  as alice
expect: 400
  problem: bad-request
  json: {"type": "{any}", "title": "{any}", "status": 400, "detail": "Unknown query parameter: startingafter, page. This list takes limit, starting_after and ending_before.", "instance": "{any}"}

request twice: GET /payments?limit=1&limit=2
  as alice
expect: 400
  problem: bad-request
