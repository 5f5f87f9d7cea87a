# RFC 3875 4.2: the body is the first CONTENT_LENGTH bytes.  A length that
# cuts the JSON short leaves malformed JSON: 400, not stored.

request cut: POST /payments
  as alice
  Idempotency-Key: "cl-3"
  Content-Type: application/json
  Content-Length: 10
  body: {"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: malformed-json|bad-content-length
check: keys=0 payments=0 charges=0
