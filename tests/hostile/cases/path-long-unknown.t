# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): a 100,000-character path that is no route: 404.

request hostile: GET /{repeat:100000:x}
expect: 404
  problem: not-found
check: keys=0 payments=0 charges=0
