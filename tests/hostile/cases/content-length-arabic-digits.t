# Contract row "body over the limit, or Content-Length that lies" and RFC
# 3875 section 4.1.2 (CONTENT_LENGTH is 1*digit): Arabic-Indic digits
# (U+0663 U+0668, "38"): not ASCII digits, 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-content-length-arabic-digits"
  Content-Type: application/json
  Content-Length: {byte:d9}{byte:a3}{byte:d9}{byte:a8}
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: bad-content-length
check: keys=0 payments=0 charges=0
