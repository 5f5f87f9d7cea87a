# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): a 100,000-character query string on the list is
# harmless: its unknown parameter is a 400 that names it, and a name of
# 100,000 characters is named cut short.

request hostile: GET /payments?x={repeat:100000:a}
  as alice
expect: 400
  problem: bad-request
  json: {"type": "{any}", "title": "{any}", "status": 400, "detail": "Unknown query parameter: x. This list takes limit, starting_after and ending_before.", "instance": "{any}"}

request long-name: GET /payments?{repeat:100000:b}=1
  as alice
expect: 400
  problem: bad-request
  json: {"type": "{any}", "title": "{any}", "status": 400, "detail": "Unknown query parameter: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.... This list takes limit, starting_after and ending_before.", "instance": "{any}"}
check: keys=0 payments=0 charges=0
