# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): a payment id of 100,000 characters: 404.

request hostile: GET /payments/{repeat:100000:a}
  as alice
expect: 404
  problem: not-found
check: keys=0 payments=0 charges=0
