# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): a percent-encoded carriage return in the path: 404,
# and the raw CR does not reach the log.

request hostile: GET /payments/%0Didem:%20forged
  as alice
expect: 404
  problem: not-found
  stderr-lacks: {byte:0d}idem: forged
check: keys=0 payments=0 charges=0
