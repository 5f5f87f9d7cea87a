# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): dot segments are not resolved by the responder:
# /payments/../metrics is a payment id, 404.

request hostile: GET /payments/../metrics
  as alice
expect: 404
  problem: not-found
check: keys=0 payments=0 charges=0
