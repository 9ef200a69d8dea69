#!/bin/sh
# Fault sweep (issue 20, in SQLite's style).  Every command that writes
# files runs with a fault injected at points spread densely over the run:
#
#   HEXPLAN_FAULT_WRITE=N  the disk fills once N bytes have gone to the
#                          run's output files (all of them together);
#   HEXPLAN_FAULT_ALLOC=N  the Nth allocation (hexplan's and jansson's)
#                          finds no memory.
#
# A write fault must end the run with exit 1 and one line naming the file
# ("No space left on device"); running out of memory with the one line
# "hexplan: error: out of memory (K bytes)" and SIGABRT (exit 134), never a
# crash or a sanitizer report.  Either way every old output is as it was,
# byte for byte, and no temporary file is left.  With the fault just past
# the run's total (the output's size, or its number of allocations) the run
# succeeds and writes the new outputs: so the sample spans the whole run.
#
# The sample is 16 points per write sweep and a geometric series of
# allocation counts (x1.5: about 25 runs); 'sh tests/cli/fault_sweep.sh --full'
# tries every byte and every allocation (hours, not for CI).  Under
# valgrind the write sweep takes 4 points and the allocation sweep is left
# out (valgrind reports the abort itself).
. "${top_srcdir:-.}/tests/lib.sh"

full=0
[ "${1:-}" = --full ] && full=1
wsteps=16
[ -n "$HX_VALGRIND" ] && wsteps=4

C=examples/clusters/mixed.json
W=examples/workloads/chat.json
R=tests/data/replan

# snap FILES...: checksums of FILES (a directory: of every file in it).
snap() {
	for f in "$@"; do
		if [ -d "$f" ]; then
			(cd "$f" && find . -type f | LC_ALL=C sort | xargs cksum)
		elif [ -e "$f" ]; then
			cksum <"$f"
		else
			echo "absent $f"
		fi
	done
}

# no_temp NAME: no temporary file anywhere under $TMP
no_temp() {
	t=$(find "$TMP" -name '*.tmp??????' | head -n 1)
	if [ -z "$t" ]; then ok; else fail "$1: a temporary file is left: $t"; fi
}

# same WHAT WANT-FILE FILES...: FILES are as WANT-FILE recorded them.
# (lib.sh's helpers set n: the sweeps count with other names.)
same() {
	what=$1 want=$2
	shift 2
	if snap "$@" | cmp -s - "$want"; then ok; else fail "$what: the outputs changed"; fi
}

# wfault N: the disk fills after N bytes of the run $new ($size bytes).
wfault() {
	# shellcheck disable=SC2086
	HEXPLAN_FAULT_WRITE=$1 run $new
	expect_rc 1 "$name, disk full after $1 of $size bytes"
	expect_err_line "^hexplan: error: $TMP/[^ ]*: No space left on device\$" \
		"$name, disk full after $1 bytes: message"
	same "$name, disk full after $1 bytes" "$TMP/old.sum" $outs
}

# sweep NAME "OUTPUTS" "OLD-ARGS" "NEW-ARGS": OLD-ARGS write the old
# OUTPUTS, NEW-ARGS different ones; NEW-ARGS then run with each fault.
# (The arguments are split on spaces: no path here holds one.)
sweep() {
	name=$1 outs=$2 old=$3 new=$4
	# shellcheck disable=SC2086
	run $new
	expect_rc 0 "$name: the new outputs"
	[ "$rc" -eq 0 ] || return
	snap $outs >"$TMP/new.sum"
	size=$(find $outs -type f -exec cat {} + | wc -c)
	# shellcheck disable=SC2086
	run $old
	expect_rc 0 "$name: the old outputs"
	[ "$rc" -eq 0 ] || return
	snap $outs >"$TMP/old.sum"
	if cmp -s "$TMP/old.sum" "$TMP/new.sum"; then fail "$name: old and new outputs are alike"; fi

	step=$((size / wsteps + 1))
	[ $full = 1 ] && step=1
	at=0
	while [ "$at" -lt "$size" ]; do
		wfault "$at"
		# the last byte, too
		[ "$at" -lt $((size - 1)) ] && [ $((at + step)) -ge "$size" ] && wfault $((size - 1))
		at=$((at + step))
	done
	no_temp "$name, write sweep"
	# shellcheck disable=SC2086
	HEXPLAN_FAULT_WRITE=$size run $new
	expect_rc 0 "$name, disk full after all $size bytes"
	same "$name, room for all $size bytes" "$TMP/new.sum" $outs

	[ -n "$HX_VALGRIND" ] && return
	# shellcheck disable=SC2086
	run $old
	at=1 runs=0
	while :; do
		# shellcheck disable=SC2086
		HEXPLAN_FAULT_ALLOC=$at run $new
		runs=$((runs + 1))
		[ "$rc" -eq 0 ] && break
		if [ "$rc" -ne 134 ]; then
			fail "$name, allocation $at fails: exit $rc, expected 134"
			return
		fi
		ok
		# (the shell reports the abort in a line of its own)
		if sed '/^Aborted/d' "$TMP/err" | tail -n 1 | grep -Eqx 'hexplan: error: out of memory \([0-9]+ bytes\)'; then
			ok
		else
			fail "$name, allocation $at fails: last line: $(sed '/^Aborted/d' "$TMP/err" | tail -n 1)"
		fi
		if grep -q 'Sanitizer\|runtime error' "$TMP/err"; then fail "$name, allocation $at: a sanitizer report"; fi
		same "$name, allocation $at fails" "$TMP/old.sum" $outs
		if [ $full = 1 ] || [ $at -lt 4 ]; then at=$((at + 1)); else at=$((at + at / 2)); fi
		if [ $runs -gt 100000 ]; then
			fail "$name: still failing at allocation $at"
			break
		fi
	done
	no_temp "$name, allocation sweep"
	same "$name, no allocation fails ($at)" "$TMP/new.sum" $outs
}

# plan: one file; plan --lp and bo: several, replaced together.
sweep "plan" "$TMP/plan.json" \
	"plan -c $C -w $W -m llama-3.1-8b -o $TMP/plan.json" \
	"plan -c $C -w $W -m qwen2.5-7b -o $TMP/plan.json"
sweep "plan --lp" "$TMP/lp.json $TMP/model.lp" \
	"plan -c $C -w $W -m llama-3.1-8b --mode colocated -o $TMP/lp.json --lp $TMP/model.lp" \
	"plan -c $C -w $W -m llama-3.1-8b --mode colocated --objective cost -o $TMP/lp.json --lp $TMP/model.lp"
BC=examples/clusters/bo-24.json
BW=examples/workloads/llama-8b-70b.json
sweep "plan --mode bo" "$TMP/bo.json $TMP/front.json $TMP/front.svg" \
	"plan -c $BC -w $BW --mode bo --budget 30 --max-evals 6 --seed 1 -o $TMP/bo.json --front $TMP/front.json --plot $TMP/front.svg" \
	"plan -c $BC -w $BW --mode bo --budget 30 --max-evals 6 --seed 2 -o $TMP/bo.json --front $TMP/front.json --plot $TMP/front.svg"

# replan: the plan and its moves together.
sweep "replan" "$TMP/re.json $TMP/moves.json" \
	"replan -p $R/mixed-colocated.json -c $C -o $TMP/re.json --moves $TMP/moves.json" \
	"replan -p $R/mixed-colocated.json -c $R/mixed-without-l40s-1.json -o $TMP/re.json --moves $TMP/moves.json"

# simulate: the report and the per-request records together.
run plan -c $C -w $W -m llama-3.1-8b -o "$TMP/sim-plan.json"
sweep "simulate" "$TMP/report.json $TMP/req.csv" \
	"simulate -p $TMP/sim-plan.json -w $W --requests 100 --seed 1 -o $TMP/report.json --per-request $TMP/req.csv" \
	"simulate -p $TMP/sim-plan.json -w $W --requests 100 --seed 2 -o $TMP/report.json --per-request $TMP/req.csv"

sweep "trace" "$TMP/t.csv" \
	"trace --rate 20 --shape code --duration 5 --seed 1 -o $TMP/t.csv" \
	"trace --rate 20 --shape code --duration 5 --seed 2 -o $TMP/t.csv"

# export: a directory of launch scripts (all or nothing), and single files.
run plan -c $C -w $W -m qwen2.5-7b -o "$TMP/other.json"
sweep "export --to launch" "$TMP/launch" \
	"export -p $TMP/sim-plan.json --to launch --format sh -o $TMP/launch" \
	"export -p $TMP/other.json --to launch --format sh -o $TMP/launch"
for to in k8s kserve "dynamo --lossy" dot; do
	sweep "export --to $to" "$TMP/x.${to%% *}" \
		"export -p $TMP/sim-plan.json --to $to -o $TMP/x.${to%% *}" \
		"export -p $TMP/other.json --to $to -o $TMP/x.${to%% *}"
done

# calibrate: from measurements, and from end-to-end serving runs.
{
	echo "gpu,model,tp,phase,batch,tokens,context,ms"
	for b in 1 4 16; do
		echo "l40s,llama-3.1-8b,1,prefill,$b,$((b * 512)),0,$((b * 40))"
		echo "l40s,llama-3.1-8b,1,decode,$b,$b,1000,$((20 + b))"
	done
} >"$TMP/m1.csv"
sed 's/,\([0-9]*\)$/,\1.5/' "$TMP/m1.csv" >"$TMP/m2.csv"
sweep "calibrate" "$TMP/cal.json" \
	"calibrate -m llama-3.1-8b -g l40s -o $TMP/cal.json $TMP/m1.csv" \
	"calibrate -m llama-3.1-8b -g l40s -o $TMP/cal.json $TMP/m2.csv"
sweep "calibrate --runs" "$TMP/scal.json" \
	"calibrate -m llama-3.1-8b -g l40s -o $TMP/scal.json $TMP/m1.csv" \
	"calibrate --runs tests/data/serving/runs.json -o $TMP/scal.json"
finish
