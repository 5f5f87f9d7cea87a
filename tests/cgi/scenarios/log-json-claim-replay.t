# The request log as JSON lines (IDEM_LOG=json, idem-fcgi(8)): one line
# per request, an object an operator's tools can parse, with the web
# server's own request id (REQUEST_ID) when it passes one, the account, the
# outcome and the keyhash, never the key itself or the API secret.  A
# claim and its replay carry the same keyhash, so a payment's lines can
# be found by it.

env IDEM_LOG=json

request first: POST /payments
  as alice
  Idempotency-Key: "order-log-7731"
  env REQUEST_ID=5f0c2a9e41b7d3c8
  Content-Type: application/json
  env IDEM_TEST_NOW_MS=1796042096789
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}
  log <<END
    {"time": "2026-11-30T12:34:56.789Z", "request_id": "5f0c2a9e41b7d3c8", "client_request_id": null,
     "remote": "127.0.0.1", "method": "POST", "path": "/payments",
     "status": 201, "outcome": "claim", "account": "acct_alice",
     "key": "{keyhash:hex}", "latency_ms": "{any}"}
  END
  stderr-lacks: order-log-7731
  stderr-lacks: {secret:alice}

# Without REQUEST_ID the responder makes one up ("req_" and 24 hex digits).
request retry: like first
  unset REQUEST_ID
expect: 201
  replay-of: first
  log <<END
    {"time": "{any}", "request_id": "{rid:req}", "client_request_id": null, "remote": "127.0.0.1",
     "method": "POST", "path": "/payments", "status": 201,
     "outcome": "replay", "account": "acct_alice", "key": "{keyhash}",
     "latency_ms": "{any}"}
  END
  stderr-lacks: order-log-7731
check: payments=1 charges=1

# A read has an account but neither key nor outcome.
request read: GET /payments/{id}
  as alice
  env REQUEST_ID=read-1
expect: 200
  log <<END
    {"time": "{any}", "request_id": "read-1", "client_request_id": null, "remote": "127.0.0.1",
     "method": "GET", "path": "/payments/{id}", "status": 200,
     "outcome": null, "account": "acct_alice", "key": null,
     "latency_ms": "{any}"}
  END
