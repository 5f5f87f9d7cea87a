# GET /payments takes limit, a whole number from 1 to 100; 1.5: 400
# bad-request.

request hostile: GET /payments?limit=1.5
  as alice
expect: 400
  problem: bad-request
check: keys=0 payments=0 charges=0
