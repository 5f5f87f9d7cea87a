# The JSON log (IDEM_LOG=json) keeps the client's X-Request-Id apart, as
# client_request_id, and only when it can be quoted as it is (1 to 128
# printable ASCII characters, no space, quote or backslash); anything
# else is null.  The request's own id (request_id) is never the
# client's: without the web server's, the responder makes one up.  A
# request that never authenticated has no account and no key; the line
# stays one line of JSON whatever bytes the path held.

env IDEM_LOG=json

request forged: GET /payments/%0A{"status":200}
  X-Request-Id: a b"c
expect: 401
  problem: unauthorized
  log <<END
    {"time": "{any}", "request_id": "{rid:req}", "client_request_id": null,
     "remote": "127.0.0.1",
     "method": "GET", "path": "/payments/\\x0a{\"status\":200}",
     "status": 401, "outcome": null, "account": null, "key": null,
     "latency_ms": "{any}"}
  END

request long: GET /healthz
  X-Request-Id: {repeat:129:r}
expect: 200
  log <<END
    {"time": "{any}", "request_id": "{rid2:req}", "client_request_id": null,
     "remote": "127.0.0.1",
     "method": "GET", "path": "/healthz", "status": 200, "outcome": null,
     "account": null, "key": null, "latency_ms": "{any}"}
  END

request longest: GET /healthz
  X-Request-Id: {repeat:128:r}
expect: 200
  log <<END
    {"time": "{any}", "request_id": "{rid3:req}", "client_request_id": "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr", "remote": "127.0.0.1",
     "method": "GET", "path": "/healthz", "status": 200, "outcome": null,
     "account": null, "key": null, "latency_ms": "{any}"}
  END

# The web server's own id is held to the same rule: one too long is
# replaced by one made up.
request server-long: GET /healthz
  env REQUEST_ID={repeat:129:s}
expect: 200
  log <<END
    {"time": "{any}", "request_id": "{rid4:req}", "client_request_id": null,
     "remote": "127.0.0.1",
     "method": "GET", "path": "/healthz", "status": 200, "outcome": null,
     "account": null, "key": null, "latency_ms": "{any}"}
  END

# A format that is not understood stops the worker at start.
request bad-format: GET /healthz
  env IDEM_LOG=xml
expect: 500
  problem: internal-error
