# /metrics shows how the service is used (claims, replays, conflicts); it
# requires a principal allowed to read metrics, so an anonymous GET is 401
# with WWW-Authenticate.

request hostile: GET /metrics
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem".*
check: keys=0 payments=0 charges=0
