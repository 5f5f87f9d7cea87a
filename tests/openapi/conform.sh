# SPDX-License-Identifier: MIT
# Sourced by tests/cgi.test, cgi-pg.test, hostile.test and live.test with
# RUNNER the command that runs the suite: runs it with IDEM_ANSWERS naming
# a file where it records every answer it sees (tests/lib/answers.py), then
# checks those answers against the OpenAPI description
# (tests/openapi/check.py), and exits with the verdict of both.  The last
# line is the suite's "NAME: N passed, M failed" again with the check's
# tests added, so that the result line stays the suite's.  Without
# python3-jsonschema the check is skipped and the runner's verdict stands;
# 77 (the runner skipped everything) stays 77.
conform_tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$conform_tmp"' EXIT
IDEM_ANSWERS=$conform_tmp/answers.jsonl
export IDEM_ANSWERS
{ eval "$RUNNER" 2>&1; echo $? >"$conform_tmp/rc"; } | tee "$conform_tmp/out"
rc=$(cat "$conform_tmp/rc")
unset IDEM_ANSWERS
if [ "$rc" -eq 77 ]; then
	exit 77
fi
: >>"$conform_tmp/answers.jsonl"
python3 "$srcdir/tests/openapi/check.py" answers "$srcdir/www/openapi.json" \
    "$conform_tmp/answers.jsonl" >"$conform_tmp/check" 2>&1
crc=$?
line=$(grep -E '^[^ ]*: [0-9]+ passed, [0-9]+ failed$' "$conform_tmp/out" |
    tail -n 1)
if [ "$crc" -eq 77 ]; then
	echo "ok - the answers against the OpenAPI description # skip: no python3-jsonschema"
	exit "$rc"
fi
# The check's own lines, its closing line as a test of the suite's.
grep -Ev '^openapi: [0-9]+ passed, [0-9]+ failed$' "$conform_tmp/check"
if [ "$crc" -eq 0 ]; then
	echo "ok - the answers conform to the OpenAPI description (www/openapi.json)"
else
	echo "FAIL - the answers conform to the OpenAPI description (www/openapi.json)"
fi
if [ -n "$line" ]; then
	echo "$line" | awk -v bad="$crc" '{
		split($0, h, ": "); split(h[2], n, /[^0-9]+/)
		printf "%s: %d passed, %d failed\n", h[1], n[1] + (bad == 0),
		    n[2] + (bad != 0) }'
fi
[ "$rc" -eq 0 ] && [ "$crc" -eq 0 ]
exit
