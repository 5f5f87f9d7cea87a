# Contract row "body over the limit, or Content-Length that lies" and RFC
# 3875 section 4.1.2 (CONTENT_LENGTH is 1*digit): a declared length one byte
# over the 64 KiB default limit is refused before a byte is read: 413.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-length-over-limit"
  Content-Type: application/json
  Content-Length: 65537
  body: {"amount": 100.00, "currency": "BRL"}
expect: 413
  problem: body-too-large
check: keys=0 payments=0 charges=0
