# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): a 100,000-character query string on the list is
# harmless: unknown parameters are ignored, 200 with the (empty) list.

request hostile: GET /payments?x={repeat:100000:a}
  as alice
expect: 200
  json: {"data": [], "has_more": false}
check: keys=0 payments=0 charges=0
