# The JSON request log (IDEM_LOG=json) names the outcomes an operator
# looks for: a duplicate while the original is inside the provider call
# is "conflict" (409), the same key with another body is "mismatch"
# (422), each with the same keyhash as the original's "claim".

env IDEM_LOG=json
gate provider

spawn first: POST /payments
  as alice
  Idempotency-Key: "order-log-8842"
  env REQUEST_ID=first-8842
  Content-Type: application/json
  env IDEM_FAULT=in_provider:wait={gate:provider}
  body: {"amount": 100.00, "currency": "BRL"}

reached provider

request dup: like first
  unset IDEM_FAULT
  env REQUEST_ID=dup-8842
expect: 409
  problem: request-in-progress
  log <<END
    {"time": "{any}", "request_id": "dup-8842", "client_request_id": null, "remote": "127.0.0.1",
     "method": "POST", "path": "/payments", "status": 409,
     "outcome": "conflict", "account": "acct_alice",
     "key": "{keyhash:hex}", "latency_ms": "{any}"}
  END
  stderr-lacks: order-log-8842

release provider
await first
expect: 201
  log <<END
    {"time": "{any}", "request_id": "first-8842", "client_request_id": null, "remote": "127.0.0.1",
     "method": "POST", "path": "/payments", "status": 201,
     "outcome": "claim", "account": "acct_alice", "key": "{keyhash}",
     "latency_ms": "{any}"}
  END

request other: like dup
  env REQUEST_ID=other-8842
  body: {"amount": 250.00, "currency": "BRL"}
expect: 422
  problem: key-reused
  log <<END
    {"time": "{any}", "request_id": "other-8842", "client_request_id": null, "remote": "127.0.0.1",
     "method": "POST", "path": "/payments", "status": 422,
     "outcome": "mismatch", "account": "acct_alice", "key": "{keyhash}",
     "latency_ms": "{any}"}
  END
check: payments=1 charges=1
