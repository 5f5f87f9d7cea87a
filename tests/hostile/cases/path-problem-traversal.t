# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): a traversal through /problems/: the responder serves
# no files, 404.

request hostile: GET /problems/%2e%2e/%2e%2e/etc/passwd
expect: 404
  problem: not-found
check: keys=0 payments=0 charges=0
