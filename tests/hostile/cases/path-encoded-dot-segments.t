# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): encoded dot segments (%2e%2e) decoded by the server
# into PATH_INFO: 404.

request hostile: GET /payments/%2e%2e/%2e%2e/etc/passwd
  as alice
expect: 404
  problem: not-found
check: keys=0 payments=0 charges=0
