# Invariant 7 (bad input never crashes a process and gets a clear
# problem+json answer): a payment id one hex digit too long: 404.

request hostile: GET /payments/pay_0123456789abcdef01234567f
  as alice
expect: 404
  problem: not-found
check: keys=0 payments=0 charges=0
