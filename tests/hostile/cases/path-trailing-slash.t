# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): /payments/ names an empty payment id: 404.

request hostile: GET /payments/
  as alice
expect: 404
  problem: not-found
check: keys=0 payments=0 charges=0
