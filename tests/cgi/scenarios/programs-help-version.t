# idem-fcgi(8) and idem-provider(8): --help and --version answer on
# standard output with exit status 0, and an unknown option or an
# argument is a usage message with exit status 2, before any
# configuration is read or anything is created: not a CGI answer, and no
# state directory.  The bad IDEM_LEASE below would stop a responder that
# read its configuration.

env IDEM_DB_DIR={tmp}/state/db
env IDEM_PROVIDER_DIR={tmp}/state/provider
env IDEM_PROVIDER_DB={tmp}/state/provider-service
env IDEM_LEASE=abc
snapshot empty

run: idem-fcgi --help
  prints: usage: idem-fcgi
run: idem-fcgi --version
  prints: idem-fcgi (idem)
run: idem-fcgi --bogus
  exit: 2
  prints: usage: idem-fcgi
run: idem-fcgi serve
  exit: 2
  prints: usage: idem-fcgi
run: idem-provider --help
  prints: usage: idem-provider
run: idem-provider --version
  prints: idem-provider (idem)
run: idem-provider -x
  exit: 2
  prints: usage: idem-provider
unchanged empty
