# Contract row "body over the limit, or Content-Length that lies" and RFC
# 3875 section 4.1.2 (CONTENT_LENGTH is 1*digit): 3.8e1: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-length-exponent"
  Content-Type: application/json
  Content-Length: 3.8e1
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: bad-content-length
check: keys=0 payments=0 charges=0
