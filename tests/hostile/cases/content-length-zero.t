# Contract row "body over the limit, or Content-Length that lies" and RFC
# 3875 section 4.1.2 (CONTENT_LENGTH is 1*digit): a length of 0 with a body
# attached reads an empty body, which is not JSON: 400 malformed-json.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-length-zero"
  Content-Type: application/json
  Content-Length: 0
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
