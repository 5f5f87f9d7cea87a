# Contract row "body over the limit, or Content-Length that lies" and RFC
# 3875 section 4.1.2 (CONTENT_LENGTH is 1*digit): 18446744073709551615
# (2^64-1) is a decimal number, just too large to represent: 413
# body-too-large, like any length over the limit, and it must not wrap.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-length-uint64-max"
  Content-Type: application/json
  Content-Length: 18446744073709551615
  body: {"amount": 100.00, "currency": "BRL"}
expect: 413
  problem: body-too-large
check: keys=0 payments=0 charges=0
