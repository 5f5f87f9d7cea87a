# In remote-user mode an absent or empty REMOTE_USER means the web server
# authenticated nobody: 401, even with a valid API key or Basic credentials
# in the Authorization field, which this mode never consults.

env IDEM_AUTH=remote-user

request empty: POST /payments
  env REMOTE_USER=
  as alice
  Idempotency-Key: "ru-4"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Basic realm="idem"

request absent: like empty
  unset REMOTE_USER
expect: 401
  problem: unauthorized

request basic: like absent
  Authorization: Basic YWNjdF9hbGljZTphbnl0aGluZw==
expect: 401
  problem: unauthorized

request list: GET /payments
  as alice
expect: 401
  problem: unauthorized
check: keys=0 payments=0 charges=0
