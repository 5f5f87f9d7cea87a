# In the default mode (IDEM_AUTH=bearer) REMOTE_USER is ignored completely,
# whatever it holds: a web server that authenticated nobody may still fill
# it from the client's own "Authorization: Basic" field (nginx's
# $remote_user does, without checking any password).  Only the API key
# names the scope.

request claimed: POST /payments
  env REMOTE_USER=acct_alice
  Idempotency-Key: "ru-5"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: Bearer realm="idem"
check: keys=0 payments=0 charges=0

# The attack as nginx relayed it: Basic acct_alice:anything, and the name.
request basic: like claimed
  Authorization: Basic YWNjdF9hbGljZTphbnl0aGluZw==
expect: 401
  problem: unauthorized
check: keys=0 payments=0 charges=0

request list: GET /payments
  env REMOTE_USER=acct_alice
expect: 401
  problem: unauthorized

# Beside bob's key, REMOTE_USER=acct_alice changes nothing: bob's scope.
request bob: like claimed
  as bob
expect: 201
  Location: /payments/{id}
check: keys=1 payments=1 charges=1

request bob-get: GET /payments/{id}
  as bob
  env REMOTE_USER=acct_alice
expect: 200
  body-of: bob

# alice's own key does not see it: it was never in her scope.
request alice-get: GET /payments/{id}
  as alice
expect: 404
  problem: not-found
