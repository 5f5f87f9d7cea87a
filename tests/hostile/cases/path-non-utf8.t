# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): a path with a byte that is not UTF-8 (%FF): 404.

request hostile: GET /payments/pay_%FF
  as alice
expect: 404
  problem: not-found
check: keys=0 payments=0 charges=0
