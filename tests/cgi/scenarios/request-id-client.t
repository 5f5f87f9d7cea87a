# A client's X-Request-Id is the client's to choose, so it is never the
# request's id: not the Request-Id header, not a problem's instance, not
# the log line's rid, or one client could give its requests the id of
# another account's (even one in the responder's own "req_" form).  It is
# logged beside the request's id as client_request_id, so that a client
# that quotes its own id can still be found.  The request's id is the
# web server's own (REQUEST_ID, UNIQUE_ID), else one made up.

request forged: POST /payments
  as alice
  Content-Type: application/json
  X-Request-Id: req_aaaaaaaaaaaaaaaaaaaaaaaa
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: missing-key
  log-line: {any} account=acct_alice key=- outcome=- ms={ms:int} client_request_id=req_aaaaaaaaaaaaaaaaaaaaaaaa rid={rid1:req}
  stderr-lacks: rid=req_aaaaaaaaaaaaaaaaaaaaaaaa
  Request-Id: {rid1}
  json: {"type": "/problems/missing-key.html", "title": "{any}", "status": 400, "detail": "{any}", "instance": "{rid1}"}

# Another account sending the same id gets an id of its own.
request other-account: like forged
  as bob
expect: 400
  problem: missing-key
  log-line: {any} account=acct_bob key=- outcome=- ms={ms2:int} client_request_id=req_aaaaaaaaaaaaaaaaaaaaaaaa rid={rid2:req}
  stderr-lacks: rid=req_aaaaaaaaaaaaaaaaaaaaaaaa
  Request-Id: {rid2}

# A problem stored with a key's answer keeps the id of the request that
# made it, never the client's.
request stored: like forged
  Idempotency-Key: "cid-1"
  body: {"amount": 1.001, "currency": "BRL"}
expect: 400
  problem: invalid-payment
  stderr-lacks: rid=req_aaaaaaaaaaaaaaaaaaaaaaaa
  Request-Id: {rid3:req}
  json: {"type": "/problems/invalid-payment.html", "title": "{any}", "status": 400, "detail": "{any}", "instance": "{rid3}"}

request stored-retry: like stored
expect: 400
  replay-of: stored
  stderr-lacks: rid=req_aaaaaaaaaaaaaaaaaaaaaaaa
  Request-Id: {rid4:req}
  json: {"type": "/problems/invalid-payment.html", "title": "{any}", "status": 400, "detail": "{any}", "instance": "{rid3}"}

# With the web server's own id both are logged, each in its field.
request with-server: like forged
  env REQUEST_ID=4f1c9a0b2d3e4f5a6b7c8d9e0f1a2b3c
expect: 400
  problem: missing-key
  Request-Id: 4f1c9a0b2d3e4f5a6b7c8d9e0f1a2b3c
  log-line: {any} client_request_id=req_aaaaaaaaaaaaaaaaaaaaaaaa rid=4f1c9a0b2d3e4f5a6b7c8d9e0f1a2b3c
  json: {"type": "/problems/missing-key.html", "title": "{any}", "status": 400, "detail": "{any}", "instance": "4f1c9a0b2d3e4f5a6b7c8d9e0f1a2b3c"}

# The JSON line has the same two fields.
request json: like forged
  env IDEM_LOG=json
expect: 400
  problem: missing-key
  Request-Id: {rid5:req}
  log <<END
    {"time": "{any}", "request_id": "{rid5}",
     "client_request_id": "req_aaaaaaaaaaaaaaaaaaaaaaaa",
     "remote": "127.0.0.1", "method": "POST", "path": "/payments",
     "status": 400, "outcome": null, "account": "acct_alice", "key": null,
     "latency_ms": "{any}"}
  END
check: payments=0 charges=0
