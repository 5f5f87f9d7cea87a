# Contract row "body over the limit, or Content-Length that lies" and RFC
# 3875 section 4.1.2 (CONTENT_LENGTH is 1*digit): a body sent with no
# CONTENT_LENGTH is no body at all (section 4.1.2), so the request has an
# empty body, which is not JSON: 400 malformed-json.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-length-absent"
  Content-Type: application/json
  unset CONTENT_LENGTH
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
