# Contract row "handler answered 2xx or 4xx": an invalid payment is a final
# answer, stored and replayed, and never reaches the provider.  Fullwidth
# "BRL" (U+FF22 U+FF32 U+FF2C, nine bytes of UTF-8): 400, and the stored and
# replayed problem is valid UTF-8 JSON: quoting a prefix of the code must
# not cut a character in half.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-currency-fullwidth"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "{byte:ef}{byte:bc}{byte:a2}{byte:ef}{byte:bc}{byte:b2}{byte:ef}{byte:bc}{byte:ac}"}
expect: 400
  problem: invalid-payment
  utf8-body
  no Idempotent-Replayed
check: keys=1 completed=1 in_progress=0 payments=0 charges=0

request retry: like hostile
expect: 400
  replay-of: hostile
  utf8-body
check: keys=1 completed=1 payments=0 charges=0
