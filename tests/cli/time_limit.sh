#!/bin/sh
# time_limit.sh: a tiny --time-limit on a big instance gives a plan marked
# "status": "time_limit" (which passes check) or exit 4 with a message; it
# never hangs, crashes or prints half a plan.  The test asserts the status,
# not the time (bench/limits measures the overshoot).
. "$(dirname "$0")/../lib.sh"

python3 - >"$TMP/big.json" <<'PY'
import json
gpus = ["h100-sxm", "a100-80g", "l40s", "l4", "a10g", "rtx4090"]
nodes = [{"name": "n%d" % i, "gpu": gpus[i % 6], "count": 8, "region": "r%d" % (i % 3)}
         for i in range(128)]
print(json.dumps({"version": 1, "nodes": nodes}))
PY
W=examples/workloads/chat.json

# limited_on WHAT CLUSTER WORKLOAD ARGS...: plan with --time-limit 0.001
# and check the outcome
limited_on() {
	what=$1 c=$2 w=$3
	shift 3
	rm -f "$TMP/plan.json"
	run plan -c "$c" -w "$w" --time-limit 0.001 -o "$TMP/plan.json" "$@"
	case $rc in
	0)
		if grep -q '"status": "time_limit"' "$TMP/plan.json"; then ok; else fail "$what: exit 0 without status time_limit"; fi
		run check -p "$TMP/plan.json" -c "$c"
		expect_rc 0 "$what: the time-limited plan passes check"
		;;
	4)
		expect_err_line '^hexplan: error: .*(time limit|its limit)' "$what: exit 4 message"
		if [ -e "$TMP/plan.json" ]; then fail "$what: exit 4 left a plan file"; else ok; fi
		;;
	*) fail "$what: exit $rc, expected 0 (time_limit) or 4" ;;
	esac
}

# limited WHAT ARGS...: the same on the big cluster, Llama 3.1 70B, chat
limited() {
	what=$1
	shift
	limited_on "$what" "$TMP/big.json" $W -m llama-3.1-70b "$@"
}

limited "colocated capacity" --mode colocated
limited "colocated cost" --mode colocated --objective cost
limited "colocated latency" --mode colocated --objective latency

limited "disagg" --mode disagg

# the other searching modes, each on its own kind of input
limited_on pipeline examples/clusters/helix-42.json examples/workloads/pipeline.json --mode pipeline
limited_on compose examples/clusters/rent-six.json examples/workloads/chat.json --mode compose -m llama-3.1-70b
limited_on cascade "$TMP/big.json" examples/workloads/cascade.json --mode cascade
limited_on route "$TMP/big.json" examples/workloads/cascade.json --mode route
limited_on bo examples/clusters/bo-48.json examples/workloads/llama-8b-70b.json --mode bo --budget 30

# cascade, route and bo price every model's shapes before they search, up to
# the deadline: at a tiny limit a plan on the shapes priced in time says
# time_limit, and a model none of whose shapes was priced is named (not a
# "fits no GPU" or budget error)
# unpriced WHAT CLUSTER WORKLOAD ARGS...
unpriced() {
	what=$1 c=$2 w=$3
	shift 3
	rm -f "$TMP/plan.json"
	run plan -c "$c" -w "$w" --time-limit "$LIMIT" -o "$TMP/plan.json" "$@"
	case $rc in
	0)
		if grep -q '"status": "time_limit"' "$TMP/plan.json"; then ok; else fail "$what at $LIMIT s: exit 0 without status time_limit"; fi
		;;
	4)
		expect_err_line "^hexplan: error: the time limit was reached before ($MODELS)'s shapes were priced\$" "$what at $LIMIT s: exit 4 names the unpriced model"
		;;
	*) fail "$what at $LIMIT s: exit $rc, expected 0 (time_limit) or 4" ;;
	esac
}
MODELS='qwen3-8b|qwen3-32b|qwen3-235b-a22b'
for LIMIT in 0.001 0.05; do
	unpriced cascade "$TMP/big.json" examples/workloads/cascade.json --mode cascade
	unpriced route "$TMP/big.json" examples/workloads/cascade.json --mode route
done
MODELS='llama-3.1-8b|llama-3.1-70b'
for LIMIT in 0.001 0.05; do
	unpriced bo examples/clusters/bo-48.json examples/workloads/llama-8b-70b.json --mode bo --budget 30
done

# without a limit the same instance is solved to optimality
run plan -c "$TMP/big.json" -w $W -m llama-3.1-70b --mode colocated -o "$TMP/plan.json"
expect_rc 0 "colocated without a limit"
if grep -q '"status": "optimal"' "$TMP/plan.json"; then ok; else fail "colocated without a limit is not optimal"; fi
finish
