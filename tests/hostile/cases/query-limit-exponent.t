# GET /payments takes limit, a whole number from 1 to 100; 1e2 is not a
# whole number written as one: 400 bad-request.

request hostile: GET /payments?limit=1e2
  as alice
expect: 400
  problem: bad-request
check: keys=0 payments=0 charges=0
