# A limit that is not a positive integer is 400 bad-request.

request letters: GET /payments?limit=abc
  as alice
expect: 400
  problem: bad-request

request zero: GET /payments?limit=0
  as alice
expect: 400
  problem: bad-request

request negative: GET /payments?limit=-1
  as alice
expect: 400
  problem: bad-request
