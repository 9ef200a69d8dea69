#!/bin/sh
# Output safety: a failed run never leaves a partial file nor touches the
# old one; a closed pipe ends a run quietly.  The disk-full failure is
# injected with HEXPLAN_FAULT_WRITE=N (the temporary file fails with ENOSPC
# after N bytes), since tests run as root and permissions prove nothing.
. "${top_srcdir:-.}/tests/lib.sh"

C=examples/clusters/mixed.json
W=examples/workloads/chat.json

# no_temp DIR: no temporary file is left in DIR
no_temp() {
	if ls "$1" | grep -q '\.tmp'; then fail "$2: a temporary file is left in $1"; else ok; fi
}

run plan -c $C -w $W -m llama-3.1-8b -o "$TMP/plan.json"
expect_rc 0 "first plan"
cp "$TMP/plan.json" "$TMP/good.json"

# plan: the disk fills while the new plan is written
HEXPLAN_FAULT_WRITE=100 run plan -c $C -w $W -m llama-3.1-70b -o "$TMP/plan.json"
expect_rc 1 "plan, disk full"
expect_err_line "^hexplan: error: $TMP/plan.json: No space left on device\$" "plan, disk full message"
if cmp -s "$TMP/plan.json" "$TMP/good.json"; then ok; else fail "plan, disk full: the old plan changed"; fi
no_temp "$TMP" "plan, disk full"

# plan: a run that finds no plan leaves the old one alone
run plan -c examples/clusters/h100-node.json -w $W -m deepseek-v3 -o "$TMP/plan.json"
expect_rc 3 "infeasible plan"
if cmp -s "$TMP/plan.json" "$TMP/good.json"; then ok; else fail "infeasible plan: the old plan changed"; fi

# a device is written in place, not replaced: /dev/full reports ENOSPC
run plan -c $C -w $W -m llama-3.1-8b -o /dev/full
expect_rc 1 "plan to /dev/full"
expect_err_line '^hexplan: error: /dev/full: No space left on device$' "/dev/full message"
if [ -c /dev/full ]; then ok; else fail "/dev/full is no longer a device"; fi
run plan -c $C -w $W -m llama-3.1-8b -o /dev/null
expect_rc 0 "plan to /dev/null"
if [ -c /dev/null ]; then ok; else fail "/dev/null is no longer a device"; fi

# a directory that does not exist
run plan -c $C -w $W -m llama-3.1-8b -o "$TMP/nodir/plan.json"
expect_rc 1 "plan into a missing directory"
expect_err_line "^hexplan: error: $TMP/nodir/plan.json: cannot create a temporary file: No such file or directory\$" "missing directory message"

# simulate, trace: the same for reports and traces
run simulate -p "$TMP/good.json" -w $W --requests 200 -o "$TMP/report.json"
expect_rc 0 "simulate"
cp "$TMP/report.json" "$TMP/report.good"
HEXPLAN_FAULT_WRITE=10 run simulate -p "$TMP/good.json" -w $W --requests 300 -o "$TMP/report.json"
expect_rc 1 "simulate, disk full"
if cmp -s "$TMP/report.json" "$TMP/report.good"; then ok; else fail "simulate: the old report changed"; fi
run trace --rate 5 --shape code --duration 10 -o "$TMP/t.csv"
cp "$TMP/t.csv" "$TMP/t.good"
HEXPLAN_FAULT_WRITE=50 run trace --rate 50 --shape code --duration 10 -o "$TMP/t.csv"
expect_rc 1 "trace, disk full"
if cmp -s "$TMP/t.csv" "$TMP/t.good"; then ok; else fail "trace: the old trace changed"; fi
no_temp "$TMP" "simulate and trace"

# export of many files: all or nothing
run export -p "$TMP/good.json" --to launch --format sh -o "$TMP/launch"
expect_rc 0 "export"
(cd "$TMP/launch" && cksum ./* >"$TMP/launch.sum")
run plan -c $C -w $W -m qwen2.5-7b -o "$TMP/other.json"
HEXPLAN_FAULT_WRITE=20 run export -p "$TMP/other.json" --to launch --format sh -o "$TMP/launch"
expect_rc 1 "export, disk full"
if (cd "$TMP/launch" && cksum ./*) | cmp -s - "$TMP/launch.sum"; then ok; else fail "export, disk full: old files changed"; fi
no_temp "$TMP/launch" "export, disk full"

# a closed pipe: quiet, whether or not the parent ignores SIGPIPE.  The
# trace (about 200 kB) is longer than a pipe holds.
for ign in no yes; do
	(
		[ $ign = yes ] && trap '' PIPE
		hx trace --rate 1000 --shape code --duration 10 2>"$TMP/err.pipe"
		echo $? >"$TMP/rc.pipe"
	) | head -c 1 >/dev/null
	r=$(cat "$TMP/rc.pipe")
	case $r in
	141) ok ;;
	*) fail "closed pipe (SIGPIPE ignored: $ign): exit $r" ;;
	esac
	if [ -s "$TMP/err.pipe" ]; then fail "closed pipe (SIGPIPE ignored: $ign): stderr: $(head -1 "$TMP/err.pipe")"; else ok; fi
done
finish
