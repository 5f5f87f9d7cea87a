# Contract row "body not JSON where JSON is required" and invariant 7: RFC
# 8259 section 8.1: senders must not add a byte order mark; this strict
# parser refuses one (EF BB BF) rather than guess at the encoding: 400.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-json-bom"
  Content-Type: application/json
  body: {byte:ef}{byte:bb}{byte:bf}{"amount": 100.00, "currency": "BRL"}
expect: 400
  problem: malformed-json
check: keys=0 payments=0 charges=0
