# RFC 9110 section 9.1: methods are case-sensitive tokens; a lower-case
# "post" is refused as a malformed request line: 400 bad-request, nothing
# stored.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-method-lower"
  Content-Type: application/json
  env REQUEST_METHOD=post
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: bad-request
check: keys=0 payments=0 charges=0
