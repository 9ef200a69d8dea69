#!/bin/sh
# The fuzz seed corpus (tests/fuzz/corpus/HARNESS/) and every crash the
# fuzzers found (tests/fuzz/regress/HARNESS/) run once through each loader
# harness, and through the command layer's (cli: a command line and its
# files).  Under the sanitizer builds and valgrind this is what keeps a
# fixed crash fixed; a harness aborts on a crash, a leak or a plan that
# does not read back the same.
. "${top_srcdir:-.}/tests/lib.sh"

for h in cluster workload trace meas hfconfig plan layercosts cli; do
	bin="$top_builddir/fuzz/fuzz_$h"
	if [ ! -x "$bin" ]; then
		fail "fuzz/fuzz_$h is not built"
		continue
	fi
	set --
	for f in tests/fuzz/corpus/$h/* tests/fuzz/regress/$h/*; do
		[ -f "$f" ] && set -- "$@" "$f"
	done
	if [ $# -lt 5 ]; then
		fail "$h: only $# corpus files"
		continue
	fi
	# shellcheck disable=SC2086
	if $HX_VALGRIND "$bin" "$@" >"$TMP/out" 2>"$TMP/err"; then
		ok
	else
		fail "fuzz_$h crashed on its corpus"
	fi
done
finish
