# RFC 8941 section 3.1.2: parameters of the key are parsed and ignored,
# whatever their size (here a 60,000-character String and one of every bare
# item type): 201, and the bare quoted key without them replays it, since
# they are not part of the key.

request hostile: POST /payments
  as alice
  Idempotency-Key: "h-params";a="{repeat:60000:x}";b=?1;c=:YWJj:;d=tok/en;e=-1.5;*f
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
  no Idempotent-Replayed
check: keys=1 payments=1 charges=1

request plain: like hostile
  Idempotency-Key: "h-params"
expect: 201
  replay-of: hostile
check: keys=1 payments=1 charges=1
