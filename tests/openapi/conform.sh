# SPDX-License-Identifier: MIT
# Sourced at the end of tests/cgi.test, cgi-pg.test, hostile.test and
# live.test, with rc the runner's exit status and IDEM_ANSWERS the answers
# it recorded (tests/lib/answers.py): checks them against the OpenAPI
# description (tests/openapi/check.py) and exits with the suite's verdict.
# Without python3-jsonschema the check is skipped and the runner's verdict
# stands; 77 (the runner skipped everything) stays 77.
if [ "$rc" -eq 77 ]; then
	exit 77
fi
python3 "$srcdir/tests/openapi/check.py" answers "$srcdir/www/openapi.json" \
    "$IDEM_ANSWERS"
crc=$?
if [ "$crc" -eq 77 ]; then
	echo "ok - the answers against the OpenAPI description # skip: no python3-jsonschema"
	exit "$rc"
fi
if [ "$crc" -ne 0 ]; then
	echo "FAIL - the answers conform to the OpenAPI description (www/openapi.json)"
	exit 1
fi
exit "$rc"
