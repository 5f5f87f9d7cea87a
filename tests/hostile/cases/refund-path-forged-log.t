# Invariant 7: a refunds path whose payment id holds a percent-encoded line
# feed: 404 before any claim, and the raw LF does not reach the log.

request hostile: POST /payments/%0Aidem:%20forged/refunds
  as alice
  Idempotency-Key: "h-1"
  Content-Type: application/json
  body: {"amount": 1.00}
expect: 404
  problem: not-found
  stderr-lacks: {byte:0a}idem: forged
check: keys=0 refunds=0
