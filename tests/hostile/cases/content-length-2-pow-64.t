# Contract row "body over the limit, or Content-Length that lies" and RFC
# 3875 section 4.1.2 (CONTENT_LENGTH is 1*digit): 18446744073709551616
# (2^64), which wraps to 0 in 64 bits: 413 body-too-large, never read as an
# empty body.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-length-2-pow-64"
  Content-Type: application/json
  Content-Length: 18446744073709551616
  body: {"amount": 100.00, "currency": "BRL"}
expect: 413
  problem: body-too-large
check: keys=0 payments=0 charges=0
