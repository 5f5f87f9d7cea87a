# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  HTTP Basic carrying alice's real API key
# as the password: still not a Bearer credential, 401.

request hostile: POST /payments
  Idempotency-Key: "h-auth-basic-with-secret"
  Content-Type: application/json
  Authorization: Basic YWNjdF9hbGljZTpza190ZXN0X2FsaWNlXzRmMWIyYjBiODIyY2QxNWQ=
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
