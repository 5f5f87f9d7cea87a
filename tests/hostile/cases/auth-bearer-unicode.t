# Contract row "no authenticated principal": 401 with WWW-Authenticate,
# nothing stored, nothing charged.  A token with non-ASCII characters (RFC
# 6750 b64token is ASCII).

request hostile: POST /payments
  Idempotency-Key: "h-auth-bearer-unicode"
  Content-Type: application/json
  Authorization: Bearer sk_t{byte:c3}{byte:a9}st_alice
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
