# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): routes are case-sensitive: /PAYMENTS is no route,
# 404.

request hostile: GET /PAYMENTS
  as alice
expect: 404
  problem: not-found
check: keys=0 payments=0 charges=0
