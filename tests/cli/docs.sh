#!/bin/sh
# The documentation does not lie: the man page SYNOPSIS is 'hexplan --help',
# every example in man/hexplan.1 and README.md runs, every command has a
# working --help, the man pages format without warnings, and
# hexplan-formats(5) names every key the loaders accept.
. "$(dirname "$0")/../lib.sh"

MAN1=man/hexplan.1
MAN5=man/hexplan-formats.5

# untroff: drop font escapes and turn \- into - (stdin to stdout).
untroff() {
	sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g'
}

# section NAME FILE: the lines of man page section NAME (without the .SH).
section() {
	awk -v want="$1" '
		/^\.SH / { s = $0; sub(/^\.SH +/, "", s); gsub(/"/, "", s); on = (s == want); next }
		on { print }' "$2"
}

# run_line WHERE LINE: run one documented command line (LINE starts with
# "hexplan "); it must exit 0.
run_line() {
	args=${2#hexplan }
	: >"$TMP/err"
	case $args in
	*[\;\&\|\<\>\`\$\(\)\\]*)
		fail "$1: '$2' is not a plain command (no pipes, redirections or substitutions)"
		return ;;
	esac
	# Plain words only (checked above), so eval just splits them as a shell
	# would, honouring any quotes.  Not under valgrind: whether the docs
	# run is the question here; the tests of each command and mode put the
	# same commands under valgrind, and repeating minutes of planning here
	# would double CI's valgrind run.
	eval "\"\$HEXPLAN\" $args" </dev/null >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ "$rc" -eq 0 ]; then ok; else fail "$1: '$2': exit $rc"; fi
}

# --- (a) the SYNOPSIS is what --help says ---------------------------------
run --help
expect_rc 0 "hexplan --help"
{
	sed -n '1s/^usage: //p' "$TMP/out"
	sed -n '2s/^ *//p' "$TMP/out"
	sed -n 's/^  \(hexplan .*\)$/\1/p' "$TMP/out"
} >"$TMP/help_synopsis"
section SYNOPSIS "$MAN1" |
	awk '/^\.nf/ { on = 1; next } /^\.fi/ { on = 0 } on && !/^\./' |
	untroff >"$TMP/man_synopsis"
if [ ! -s "$TMP/man_synopsis" ]; then
	fail "$MAN1: no .nf/.fi block in SYNOPSIS"
elif cmp -s "$TMP/help_synopsis" "$TMP/man_synopsis"; then
	ok
else
	fail "$MAN1: SYNOPSIS differs from 'hexplan --help' (< help, > man)"
	diff "$TMP/help_synopsis" "$TMP/man_synopsis" >&2
fi

# --- (b) every '$ hexplan' line of the EXAMPLES runs ----------------------
section EXAMPLES "$MAN1" | untroff |
	sed -n 's/^[[:space:]]*\$ \(hexplan .*\)$/\1/p' >"$TMP/man_examples"
n=$(wc -l <"$TMP/man_examples")
if [ "$n" -ge 8 ]; then ok; else fail "$MAN1: only $n '\$ hexplan' examples in EXAMPLES"; fi
while IFS= read -r line; do
	run_line "$MAN1 EXAMPLES" "$line"
done <"$TMP/man_examples"

# --- (c) every 'hexplan ' line in README.md's fenced blocks runs ----------
awk '/^[[:space:]]*```/ { fence = !fence; next }
	fence && /^hexplan / { print }' README.md >"$TMP/readme_examples"
n=$(wc -l <"$TMP/readme_examples")
if [ "$n" -ge 3 ]; then ok; else fail "README.md: only $n 'hexplan' lines in code blocks"; fi
while IFS= read -r line; do
	run_line README.md "$line"
done <"$TMP/readme_examples"
# The quick start is exactly the two promised commands.
: >"$TMP/err"
awk '/^## Quick start/ { on = 1; next } /^## / { on = 0 }
	on && /^```/ { fence = !fence; next } on && fence { print }' README.md >"$TMP/quick"
printf './quickstart\nmake check\n' >"$TMP/quick_want"
if cmp -s "$TMP/quick" "$TMP/quick_want"; then ok; else fail "README.md: Quick start block is not './quickstart' and 'make check'"; fi

# --- (d) every command has a working --help --------------------------------
hx --help | awk '/^commands:/ { on = 1; next } /^$/ { on = 0 } on { print $1 }' >"$TMP/commands"
n=$(wc -l <"$TMP/commands")
if [ "$n" -ge 4 ]; then ok; else fail "hexplan --help lists $n commands"; fi
while IFS= read -r cmd; do
	for h in --help -h; do
		run "$cmd" "$h"
		expect_rc 0 "hexplan $cmd $h"
		if head -n 1 "$TMP/out" | grep -q "^usage: hexplan $cmd"; then
			ok
		else
			fail "hexplan $cmd $h: no 'usage: hexplan $cmd' line"
		fi
	done
	# Its usage lines are the ones the main help shows.
	sed -e 's/^usage: //' -e 's/^       //' "$TMP/out" | grep "^hexplan $cmd " >"$TMP/cmd_usage"
	grep "^hexplan $cmd " "$TMP/help_synopsis" >"$TMP/main_usage"
	if [ -s "$TMP/cmd_usage" ] && cmp -s "$TMP/cmd_usage" "$TMP/main_usage"; then
		ok
	else
		fail "hexplan $cmd --help: usage differs from 'hexplan --help'"
	fi
	# The man page documents the command and each of its options.
	: >"$TMP/err"
	if grep -q "^\.SS $cmd\$" "$MAN1"; then ok; else fail "$MAN1: no '.SS $cmd'"; fi
	for opt in $(grep -o -- '-[-a-z]*' "$TMP/main_usage" | grep -v -- '^-*$' | sort -u); do
		if untroff <"$MAN1" | grep -q -- "$opt"; then ok; else fail "$MAN1: option $opt of $cmd not described"; fi
	done
done <"$TMP/commands"

# --- (e) the man pages format without warnings -----------------------------
if command -v man >/dev/null 2>&1; then
	for page in "$MAN1" "$MAN5"; do
		if man --warnings -l -Tutf8 "$page" >/dev/null 2>"$TMP/err"; then
			if [ -s "$TMP/err" ]; then
				fail "$page: man prints warnings"
			else
				ok
			fi
		else
			fail "$page: man fails"
		fi
	done
else
	echo "SKIP: man is not installed; man pages not formatted"
fi

# --- (f) hexplan-formats(5) names every key the loaders accept ------------
# From the loaders (src/model/): every
# 'const char *const NAME[] = {...}' list (allowed keys and enumerated
# values), the keys added to an allowed list one by one, and the Hugging
# Face keys read through HF("...") or json_object_get().
LOADERS="src/model/cluster.c src/model/workload.c src/model/tables.c src/model/catalog.c src/model/calib.c src/sim/servfit.c"
{
	# shellcheck disable=SC2086
	awk '/const char \*const [A-Za-z_]*\[\] = \{/ { on = 1 }
		on { print }
		on && /\};/ { on = 0 }' $LOADERS | grep -o '"[^"]*"' | tr -d '"'
	# shellcheck disable=SC2086
	grep -ho 'allowed\[n++\] = "[A-Za-z0-9_]*"' $LOADERS | sed 's/.*= "//; s/"$//'
	grep -o 'HF("[A-Za-z0-9_]*"' src/model/catalog.c | sed 's/^HF("//; s/"$//'
	grep -o 'json_object_get([a-z]*, "[A-Za-z0-9_]*")' src/model/catalog.c |
		sed 's/.*, "//; s/")$//'
} | sort -u >"$TMP/keys"
: >"$TMP/err"
n=$(wc -l <"$TMP/keys")
if [ "$n" -ge 100 ]; then ok; else fail "found only $n loader keys in src/ (extraction broken?)"; fi
untroff <"$MAN5" | sed 's/\\(dq/"/g' >"$TMP/man5"
missing=
while IFS= read -r key; do
	if grep -qw -- "$key" "$TMP/man5"; then ok; else missing="$missing $key"; fi
done <"$TMP/keys"
[ -z "$missing" ] || fail "$MAN5 does not mention:$missing"

finish
