# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): a payment id in upper-case hex is no id: 404.

request hostile: GET /payments/pay_ABCDEF0123456789ABCDEF01
  as alice
expect: 404
  problem: not-found
check: keys=0 payments=0 charges=0
