# Contract row "body over the limit, or Content-Length that lies" and RFC
# 3875 section 4.1.2 (CONTENT_LENGTH is 1*digit): RFC 3875 section 4.2: the
# body is the first CONTENT_LENGTH bytes; 20 bytes of this body are
# truncated JSON: 400 malformed-json.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-length-smaller-than-body"
  Content-Type: application/json
  Content-Length: 20
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
