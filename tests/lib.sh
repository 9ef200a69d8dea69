# shellcheck shell=sh
# Shared helpers for the CLI tests (sourced by tests/cli/*.sh).
# Run by 'make check' with HEXPLAN, top_srcdir and top_builddir set; a test
# may also be run by hand from the top of the tree: sh tests/cli/foo.sh
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${HEXPLAN:=$top_builddir/hexplan}"
: "${HX_VALGRIND:=}"
export LC_ALL=C

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hexplan-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$top_srcdir" || exit 99

fails=0
passes=0

# hx ARGS...: run hexplan (under valgrind when HX_VALGRIND is set).
hx() {
	# shellcheck disable=SC2086
	$HX_VALGRIND "$HEXPLAN" "$@"
}

# run ARGS...: run hexplan, keep stdout in $TMP/out, stderr in $TMP/err and
# the status in $rc.
run() {
	hx "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
}

ok() { passes=$((passes + 1)); }
fail() {
	fails=$((fails + 1))
	echo "FAIL: $*" >&2
	if [ -s "$TMP/err" ]; then sed 's/^/  stderr: /' "$TMP/err" | head -5 >&2; fi
}

# expect_rc WANT DESCRIPTION
expect_rc() {
	if [ "$rc" -eq "$1" ]; then ok; else fail "$2: exit $rc, expected $1"; fi
}

# expect_err_line PATTERN DESCRIPTION: stderr is exactly one line matching
# the extended regular expression PATTERN.
expect_err_line() {
	n=$(wc -l <"$TMP/err")
	if [ "$n" -ne 1 ]; then
		fail "$2: stderr has $n lines, expected 1"
	elif grep -Eq -- "$1" "$TMP/err"; then
		ok
	else
		fail "$2: stderr does not match /$1/"
	fi
}

# expect_err_exact FILE TEXT DESCRIPTION: stderr is exactly
# "hexplan: error: FILE: TEXT" (the diff shown when not).
expect_err_exact() {
	printf 'hexplan: error: %s: %s\n' "$1" "$2" >"$TMP/want"
	if cmp -s "$TMP/err" "$TMP/want"; then
		ok
	else
		fail "$3: stderr differs"
		diff "$TMP/want" "$TMP/err" | sed 's/^/  /' >&2
	fi
}

# expect_out PATTERN DESCRIPTION: stdout matches PATTERN (extended regex).
expect_out() {
	if grep -Eq -- "$1" "$TMP/out"; then ok; else fail "$2: stdout does not match /$1/"; fi
}

# jnum KEYPATH: a number from the JSON on $TMP/out, by a jq-like dotted path.
jnum() {
	python3 -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v=v[int(k)] if isinstance(v,list) else v[k]
print(v)' "$TMP/out" "$1"
}

# approx A B REL: true when |A-B| <= REL*|B|
approx() {
	python3 -c 'import sys; a,b,r=map(float,sys.argv[1:]); sys.exit(0 if abs(a-b)<=r*abs(b) else 1)' "$1" "$2" "$3"
}

# finish: print the summary line and exit with the right status.
finish() {
	echo "$passes passed, $fails failed"
	[ "$fails" -eq 0 ]
}

# rename_group IN OUT INDEX NAME: plan IN with group INDEX named NAME, its
# ingress routes following, written to OUT.
rename_group() {
	python3 - "$@" <<'PY'
import json, sys
q = json.load(open(sys.argv[1]))
g, new = q["groups"][int(sys.argv[3])], sys.argv[4]
old, g["name"] = g["name"], new
for r in q["routing"]["ingress"]:
    if r["group"] == old:
        r["group"] = new
json.dump(q, open(sys.argv[2], "w"))
PY
}
