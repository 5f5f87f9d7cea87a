# An API key that is not in the keys file is 401, not stored.  The challenge
# may carry error="invalid_token" (RFC 6750 3.1), since a token was sent.

request first: POST /payments
  Authorization: Bearer sk_test_nobody_0000000000000
  Idempotency-Key: "auth-2"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 401
  problem: unauthorized
  WWW-Authenticate: ~ Bearer realm="idem"(, error="[a-z_]+")?

# The keys file holds digests: sending the digest itself is not the secret.
request digest: like first
  Authorization: Bearer 0d6f6b7f0a6c0f1d8a2b3f1e4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f
expect: 401
  problem: unauthorized
check: keys=0 payments=0 charges=0
