# One account-name rule (idemctl(8), "ACCOUNT NAMES"): 1 to 64 of A-Z a-z
# 0-9 . _ @ -.  idemctl new-key refuses any other account with exit
# status 2 and prints no keys-file line, so what it prints always parses.
# A keys file that does not parse stops the responder at start with the
# file's name and the line's number in its log, as other invalid settings
# do, and it answers nothing it would have stored.

ctl: new-key ""
  exit: 2
  prints: 1 to 64 of A-Z a-z 0-9 . _ @ -
ctl: new-key "acct alice"
  exit: 2
  prints: account name
ctl: new-key "acct{byte:0a}alice"
  exit: 2
  prints: account name
ctl: new-key {repeat:65:a}
  exit: 2
  prints: account name
ctl: new-key acct_carol@example.com
  prints: keys file line: acct_carol@example.com

# The line new-key would once print for an empty account.
file badkeys
  line: # account  sha256(secret) in hex
  line:  8ec10ca30d2669126754a4a9a35f3c6968cda45f84bb25529b7944fabb8fbd76

request first: POST /payments
  as alice
  Idempotency-Key: "keys-1"
  Content-Type: application/json
  env IDEM_KEYS_FILE={tmp}/badkeys
  body: {"amount": 100.00, "currency": "BRL"}
expect: 500
  problem: internal-error
  stderr-has: {tmp}/badkeys:2:

request fixed: like first
  env IDEM_KEYS_FILE={tmp}/keys
expect: 201
check: keys=1 charges=1
