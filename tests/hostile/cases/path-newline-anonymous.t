# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): the same forged log line in a path that is no route,
# without credentials: 404 (routes are checked first), and the log escapes
# it.

request hostile: GET /%0Aidem:%20127.0.0.1%20GET%20/healthz%20200
expect: 404
  problem: not-found
  stderr-lacks: {byte:0a}idem: 127.0.0.1 GET /healthz
check: keys=0 payments=0 charges=0
