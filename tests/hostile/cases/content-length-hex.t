# Contract row "body over the limit, or Content-Length that lies" and RFC
# 3875 section 4.1.2 (CONTENT_LENGTH is 1*digit): 0x26: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-length-hex"
  Content-Type: application/json
  Content-Length: 0x26
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: bad-content-length
check: keys=0 payments=0 charges=0
