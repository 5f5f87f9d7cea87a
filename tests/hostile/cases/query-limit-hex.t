# GET /payments takes limit, a whole number from 1 to 100; 0x10: 400
# bad-request.

request hostile: GET /payments?limit=0x10
  as alice
expect: 400
  problem: bad-request
check: keys=0 payments=0 charges=0
