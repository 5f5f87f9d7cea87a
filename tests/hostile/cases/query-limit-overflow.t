# GET /payments takes limit, a whole number from 1 to 100; a number past the
# range of a long must not saturate into a valid value: 400 bad-request.

request hostile: GET /payments?limit=99999999999999999999
  as alice
expect: 400
  problem: bad-request
check: keys=0 payments=0 charges=0
