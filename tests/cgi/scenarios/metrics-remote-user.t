# In remote-user mode the monitoring account is the user the web server
# authenticated: REMOTE_USER equal to IDEM_METRICS_ACCOUNT (default
# "metrics") reads /metrics; another user gets 403; nobody gets 401, and
# an API key is not consulted.

env IDEM_AUTH=remote-user

request monitor: GET /metrics
  env REMOTE_USER=metrics
expect: 200
  Content-Type: ~ text/plain(;.*)?
  body: {any}# TYPE {any}

request customer: GET /metrics
  env REMOTE_USER=acct_alice
expect: 403
  problem: forbidden

request nobody: GET /metrics
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Basic realm="idem"

request key: GET /metrics
  as alice
expect: 401
  problem: unauthorized

env IDEM_METRICS_ACCOUNT=ops@example.org

request renamed: GET /metrics
  env REMOTE_USER=ops@example.org
expect: 200
  body: {any}# TYPE {any}

request old-name: GET /metrics
  env REMOTE_USER=metrics
expect: 403
  problem: forbidden
