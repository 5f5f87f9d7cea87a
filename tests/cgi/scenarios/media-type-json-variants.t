# Media types are case-insensitive and parameters do not change them:
# application/json; charset=utf-8 and Application/JSON are JSON.

request charset: POST /payments
  as alice
  Idempotency-Key: "mt-2"
  Content-Type: application/json; charset=utf-8
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201

request upper: like charset
  Idempotency-Key: "mt-3"
  Content-Type: Application/JSON
expect: 201
check: keys=2 payments=2 charges=2
