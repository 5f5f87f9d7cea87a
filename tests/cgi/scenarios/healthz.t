# GET /healthz needs no authentication and no key.

request health: GET /healthz
expect: 200
  Content-Type: application/json
  json: {"status": "ok"}
