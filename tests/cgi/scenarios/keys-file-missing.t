# idem-fcgi(8): with IDEM_AUTH=bearer (the default) the keys file must
# exist: a missing IDEM_KEYS_FILE stops the worker at start, with a log
# line naming the variable and the file, instead of a service on which no
# request can ever authenticate.  Nothing is created.  With
# IDEM_AUTH=remote-user the keys are not used, and a missing file is none.

env IDEM_KEYS_FILE={tmp}/no-such-keys
snapshot empty

request first: POST /payments
  as alice
  Idempotency-Key: "keys-1"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 500
  problem: internal-error
  stderr-has: IDEM_KEYS_FILE {tmp}/no-such-keys: No such file or directory
unchanged empty

env IDEM_AUTH=remote-user
request carol: POST /payments
  env REMOTE_USER=acct_carol
  Idempotency-Key: "keys-2"
  Content-Type: application/json
  body: {"amount": 100.00, "currency": "BRL"}
expect: 201
