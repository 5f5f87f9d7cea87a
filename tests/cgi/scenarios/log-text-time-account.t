# The default request log (IDEM_LOG=text, idem-fcgi(8)): every line
# starts with when the request ended, RFC 3339 in UTC to the millisecond,
# and names the account that made the request, so that an operator can
# tell when and for whom without switching to JSON.  A request that never
# authenticated has "-" for its account.

request first: POST /payments
  as alice
  Idempotency-Key: "order-text-4410"
  env REQUEST_ID=checkout-7f3a
  Content-Type: application/json
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}
  log-line: 2026-11-30T12:34:56.789Z idem: 127.0.0.1 POST /payments 201 account=acct_alice key={keyhash:hex} outcome=claim ms={ms:int} client_request_id=- rid=checkout-7f3a
  stderr-lacks: order-text-4410
  stderr-lacks: {secret:alice}

request retry: like first
  env IDEM_TEST_NOW_MS=1796042097000
  unset REQUEST_ID
expect: 201
  replay-of: first
  log-line: 2026-11-30T12:34:57.000Z idem: 127.0.0.1 POST /payments 201 account=acct_alice key={keyhash} outcome=replay ms={ms2:int} client_request_id=- rid={rid:text}

# On the real clock the time has the same form.
request list: GET /payments
  as bob
expect: 200
  log-line: {when:time} idem: 127.0.0.1 GET /payments 200 account=acct_bob key=- outcome=- ms={ms5:int} client_request_id=- rid={rid5:text}

request other: GET /payments/{id}
  as bob
  env REQUEST_ID=read-2
  env IDEM_TEST_NOW_MS=1796042100000
expect: 404
  log-line: 2026-11-30T12:35:00.000Z idem: 127.0.0.1 GET /payments/{id} 404 account=acct_bob key=- outcome=- ms={ms3:int} client_request_id=- rid=read-2

request anonymous: GET /payments
  env REQUEST_ID=anon-3
  env IDEM_TEST_NOW_MS=1796042100001
expect: 401
  log-line: 2026-11-30T12:35:00.001Z idem: 127.0.0.1 GET /payments 401 account=- key=- outcome=- ms={ms4:int} client_request_id=- rid=anon-3
