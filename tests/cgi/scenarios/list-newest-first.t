# GET /payments lists the caller's payments newest first; ?limit=N cuts the
# list and has_more says whether more remain.  Bob's payment never shows.

request p1: POST /payments
  as alice
  Idempotency-Key: "list-1"
  Content-Type: application/json
  env IDEM_TEST_NOW_MS=1796042096000
  body: {"amount": 1.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id1}

request p2: like p1
  Idempotency-Key: "list-2"
  env IDEM_TEST_NOW_MS=1796042097000
  body: {"amount": 2.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id2}

request p3: like p1
  Idempotency-Key: "list-3"
  env IDEM_TEST_NOW_MS=1796042098000
  body: {"amount": 3.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id3}

request bob: like p1
  as bob
  Idempotency-Key: "list-b"
  env IDEM_TEST_NOW_MS=1796042099000
  body: {"amount": 4.00, "currency": "BRL"}
expect: 201

request two: GET /payments?limit=2
  as alice
  env IDEM_TEST_NOW_MS=1796042100000
expect: 200
  Content-Type: application/json
  json <<END
  {"data": [
     {"id": "{id3}", "amount": 3.00, "currency": "BRL", "status": "succeeded",
      "charge_id": "{c3:ch}", "created_at": "2026-11-30T12:34:58.000Z"},
     {"id": "{id2}", "amount": 2.00, "currency": "BRL", "status": "succeeded",
      "charge_id": "{c2:ch}", "created_at": "2026-11-30T12:34:57.000Z"}
   ],
   "has_more": true}
  END

request three: GET /payments?limit=3
  as alice
expect: 200
  json <<END
  {"data": [{"id": "{id3}", "amount": 3.00, "currency": "BRL", "status": "succeeded",
             "charge_id": "{c3}", "created_at": "{any}"},
            {"id": "{id2}", "amount": 2.00, "currency": "BRL", "status": "succeeded",
             "charge_id": "{c2}", "created_at": "{any}"},
            {"id": "{id1}", "amount": 1.00, "currency": "BRL", "status": "succeeded",
             "charge_id": "{c1:ch}", "created_at": "2026-11-30T12:34:56.000Z"}],
   "has_more": false}
  END

request all: GET /payments
  as alice
expect: 200
  json: {"data": ["{any}", "{any}", "{any}"], "has_more": false}
