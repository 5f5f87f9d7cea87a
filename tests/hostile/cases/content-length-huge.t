# Contract row "body over the limit, or Content-Length that lies" and RFC
# 3875 section 4.1.2 (CONTENT_LENGTH is 1*digit): 99999999999999999999999: a
# decimal number too large to represent is over the limit: 413.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-length-huge"
  Content-Type: application/json
  Content-Length: 99999999999999999999999
  body: {"amount": 100.00, "currency": "BRL"}
expect: 413
  problem: body-too-large
check: keys=0 payments=0 charges=0
