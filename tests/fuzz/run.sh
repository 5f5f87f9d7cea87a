#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every libFuzzer target of a build for a bounded time on a scratch
# copy of its seed corpus (tests/fuzz/corpus/NAME), plus the seeds that
# the build's tests/fuzz/seed_NAME writes, if there is one, and with the
# dictionary tests/fuzz/NAME.dict, if there is one.  A crash, a sanitizer
# report or a leak fails the target; the input that did it is kept in
# the scratch directory, whose path is printed.
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET]
set -u
build=$(cd "${1:?usage: run.sh BUILD_DIR [SECONDS]}" && pwd) || exit 2
secs=${2:-15}
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/idem-fuzz-XXXXXX")
passed=0 failed=0
for target in "$build"/tests/fuzz/fuzz_*; do
	[ -x "$target" ] || continue
	name=${target##*/fuzz_}
	mkdir -p "$scratch/$name/corpus"
	[ -d "$here/corpus/$name" ] && cp "$here/corpus/$name"/* "$scratch/$name/corpus/" 2>/dev/null
	seed=$build/tests/fuzz/seed_$name
	if [ -x "$seed" ] && ! "$seed" "$scratch/$name/corpus" >"$scratch/$name/seed.log" 2>&1; then
		echo "FAIL - fuzz $name: $seed could not write the seeds"
		sed 's/^/#   /' "$scratch/$name/seed.log"
		failed=$((failed + 1))
		continue
	fi
	dict=()
	[ -f "$here/$name.dict" ] && dict=(-dict="$here/$name.dict")
	if (cd "$scratch/$name" && "$target" -max_total_time="$secs" -timeout=10 \
		-rss_limit_mb=2048 ${dict[@]+"${dict[@]}"} corpus >log 2>&1); then
		runs=$(grep -Eo 'Done [0-9]+ runs' "$scratch/$name/log" | tail -n 1)
		echo "ok - fuzz $name: $runs in ${secs}s, no crash"
		passed=$((passed + 1))
	else
		echo "FAIL - fuzz $name: see $scratch/$name (log and crash input)"
		tail -n 30 "$scratch/$name/log" | sed 's/^/#   /'
		failed=$((failed + 1))
	fi
done
[ $failed -eq 0 ] && rm -rf "$scratch"
[ $((passed + failed)) -gt 0 ] || { echo "fuzz: no targets in $build"; failed=1; }
echo "fuzz: $passed passed, $failed failed"
[ $failed -eq 0 ]
