# Refunds: the provider unavailable (nothing happened) releases the claim
# and gives the hold back in the release's transaction: 502, and the
# retry refunds the whole payment; a timeout keeps the claim and its hold
# (504), and the retry resumes: one provider refund, never two.

request pay: POST /payments
  as alice
  Idempotency-Key: "pay-r7"
  Content-Type: application/json
  body: {"amount": 40.00, "currency": "BRL"}
expect: 201
  Location: /payments/{id}

request down: POST /payments/{id}/refunds
  as alice
  Idempotency-Key: "refund-down"
  Content-Type: application/json
  env IDEM_PROVIDER_FAIL=unavailable
  body: {}
expect: 502
  problem: provider-failed
check: keys=1 in_progress=0 refunds=0 provider_refunds=0

request up: like down
  unset IDEM_PROVIDER_FAIL
expect: 201
  json: {"id":"{rid}","payment":"{id}","amount":40.00,"currency":"BRL","status":"succeeded","created_at":"{any}"}
check: refunds=1 provider_refunds=1

request pay2: like pay
  Idempotency-Key: "pay-r8"
expect: 201
  Location: /payments/{id2}

request lost: POST /payments/{id2}/refunds
  as alice
  Idempotency-Key: "refund-timeout"
  Content-Type: application/json
  env IDEM_PROVIDER_FAIL=timeout
  body: {"amount": 25.00}
expect: 504
  problem: provider-timeout
check: in_progress=1 refunds=1 provider_refunds=2

request over: POST /payments/{id2}/refunds
  as alice
  Idempotency-Key: "refund-while-held"
  Content-Type: application/json
  body: {"amount": 20.00}
expect: 400
  problem: refund-exceeds-payment

request resumed: like lost
  unset IDEM_PROVIDER_FAIL
expect: 201
  no Idempotent-Replayed
check: in_progress=0 refunds=2 provider_refunds=2

request get: GET /payments/{id2}
  as alice
expect: 200
  json: {"id":"{id2}","amount":40.00,"currency":"BRL","status":"succeeded","charge_id":"{any}","created_at":"{any}","amount_refunded":25.00}
