# RFC 3875 4.1.2: CONTENT_LENGTH is one or more decimal digits.  Anything
# else is 400 bad-content-length, not stored.

request letters: POST /payments
  as alice
  Idempotency-Key: "cl-2"
  Content-Type: application/json
  Content-Length: 38abc
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: bad-content-length

request negative: like letters
  Content-Length: -38
expect: 400
  problem: bad-content-length

request spaced: like letters
  Content-Length: {repeat:1: }38
expect: 400
  problem: bad-content-length

request plus: like letters
  Content-Length: +38
expect: 400
  problem: bad-content-length

request hex: like letters
  Content-Length: 0x26
expect: 400
  problem: bad-content-length

request huge: like letters
  Content-Length: 99999999999999999999999999
expect: 400|413
  problem: bad-content-length|body-too-large
check: keys=0 payments=0 charges=0
