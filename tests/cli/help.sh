#!/bin/sh
# The command table: help, version, usage errors.
. "$(dirname "$0")/../lib.sh"

run --help
expect_rc 0 "--help"
expect_out '^usage: hexplan ' "--help usage line"
cp "$TMP/out" "$TMP/help"
for c in estimate calibrate profiles validate plan simulate check trace export replan; do
	grep -q "^  $c " "$TMP/help" && ok || fail "--help lists $c"
	run "$c" --help
	expect_rc 0 "$c --help"
	expect_out "^usage: hexplan $c" "$c --help usage"
done
# Only commands that work are listed (every command is built now).

# The modes are listed once, in cmd_plan.c's table; the man page is written by
# hand, so its --mode entry must name exactly the modes 'plan --help' names
# (docs.sh compares the SYNOPSIS line).
run plan --help
modes=$(sed -n 's/.*\[--mode \([^]]*\)\].*/\1/p' "$TMP/out")
if [ -n "$modes" ] && grep -qxF ".BI \\-\\-mode \" $modes\"" man/hexplan.1; then ok
else fail "man/hexplan.1's --mode entry names the modes of 'plan --help' ($modes)"; fi

run --version
expect_rc 0 "--version"
expect_out '^hexplan [0-9]+\.[0-9]+\.[0-9]+$' "--version text"

run
expect_rc 2 "no command"
if grep -q '^usage: hexplan' "$TMP/err"; then ok; else fail "no command: usage on stderr"; fi

run frobnicate
expect_rc 2 "unknown command"
expect_err_line "^hexplan: error: 'frobnicate' is not a hexplan command" "unknown command"

run estimate -m llama-3.1-8b
expect_rc 2 "estimate without -g"
if grep -q '^hexplan: error: -m MODEL and -g GPU are required$' "$TMP/err"; then ok; else fail "missing -g message"; fi

run estimate -m llama-3.1-8b -g h100-sxm --tp 0
expect_rc 2 "--tp 0"

run estimate -m llama-3.1-8b -g h100-sxm --bogus
expect_rc 2 "unknown option"
if grep -q "unknown option '--bogus'" "$TMP/err"; then ok; else fail "unknown option message"; fi

run --catalog
expect_rc 2 "--catalog without argument"

finish
