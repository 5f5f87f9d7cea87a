# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): %00 in a payment id (the environment cannot carry a
# NUL, so it arrives as the three characters): 404.

request hostile: GET /payments/pay_%00
  as alice
expect: 404
  problem: not-found
check: keys=0 payments=0 charges=0
