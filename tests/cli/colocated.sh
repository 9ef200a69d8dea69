#!/bin/sh
# plan --mode colocated: MILP plans that check accepts, beat the baseline,
# honour each objective, and whose LP files other solvers agree on.
. "$(dirname "$0")/../lib.sh"

C=examples/clusters/mixed.json
W=examples/workloads/chat.json

run plan -c $C -w $W -m llama-3.1-70b --mode colocated -o "$TMP/p.json" --lp "$TMP/p.lp"
expect_rc 0 "colocated plan"
run check -p "$TMP/p.json" -c $C
expect_rc 0 "check accepts the colocated plan"
run plan -p "$TMP/p.json"
[ "$(jnum mode)" = "colocated" ] && ok || fail "mode"
[ "$(jnum solver.engine)" = "glpk" ] && ok || fail "engine"
[ "$(jnum solver.status)" = "optimal" ] && ok || fail "status $(jnum solver.status)"
obj=$(jnum solver.objective)
approx "$(jnum solver.bound)" "$obj" 1e-9 && ok || fail "bound equals objective at optimality"

# Deterministic: the same inputs give the same bytes.
run plan -c $C -w $W -m llama-3.1-70b --mode colocated
cmp -s "$TMP/out" "$TMP/p.json" && ok || fail "colocated plan is not deterministic"

# More predicted capacity than the baseline on the same GPUs.
hx plan -c $C -w $W -m llama-3.1-70b -o "$TMP/b.json"
python3 - "$TMP/p.json" "$TMP/b.json" <<'PY' && ok || fail "colocated predicted capacity vs baseline"
import json, sys
p, b = (json.load(open(f))["predicted"]["capacity_rps"] for f in sys.argv[1:3])
assert p >= 1.2 * b, (p, b)
PY

# The LP file keeps the objective sense; cbc finds the same optimum.
grep -q '^Maximize' "$TMP/p.lp" && ok || fail "LP file objective sense"
if command -v cbc >/dev/null 2>&1; then
	cbc "$TMP/p.lp" solve >"$TMP/cbc.out" 2>&1
	cobj=$(sed -n 's/^Objective value: *//p' "$TMP/cbc.out" | head -1)
	[ -n "$cobj" ] && approx "$cobj" "$obj" 1e-5 && ok || fail "cbc objective '$cobj' vs glpk $obj"
else
	echo "colocated.sh: cbc absent, LP cross-check skipped"
fi

# cost: the cheapest set of GPUs that carries the workload's rate.
run plan -c $C -w $W -m llama-3.1-70b --mode colocated --objective cost -o "$TMP/cost.json"
expect_rc 0 "objective cost"
python3 - "$TMP/cost.json" "$TMP/p.json" <<'PY' && ok || fail "cost plan"
import json, sys
c, p = (json.load(open(f)) for f in sys.argv[1:3])
assert c["predicted"]["capacity_rps"] >= 20, c["predicted"]
assert c["predicted"]["usd_per_hour"] < p["predicted"]["usd_per_hour"], (c["predicted"], p["predicted"])
assert abs(c["solver"]["objective"] - c["predicted"]["usd_per_hour"]) < 1e-3 * c["solver"]["objective"]
PY
run check -p "$TMP/cost.json" -c $C
expect_rc 0 "check accepts the cost plan"

# latency: carries the rate with a TTFT bound no worse than the capacity plan's.
run plan -c $C -w $W -m llama-3.1-70b --mode colocated --objective latency -o "$TMP/lat.json"
expect_rc 0 "objective latency"
python3 - "$TMP/lat.json" "$TMP/p.json" <<'PY' && ok || fail "latency plan"
import json, sys
l, p = (json.load(open(f))["predicted"] for f in sys.argv[1:3])
assert l["capacity_rps"] >= 20, l
assert l["ttft_ms_p99"] <= p["ttft_ms_p99"] + 1e-6, (l, p)
PY

# A rate the cluster cannot carry: exit 3, saying how much it can.
sed 's/"rate_rps": 20/"rate_rps": 5000/' $W >"$TMP/heavy.json"
run plan -c $C -w "$TMP/heavy.json" -m llama-3.1-70b --mode colocated --objective cost -o "$TMP/none.json"
expect_rc 3 "rate above capacity"
expect_err_line "^hexplan: error: the workload's rate of 5000 req/s is above what all the GPUs carry at the SLO \(at most [0-9.]+ req/s\)$" "rate above capacity message"
[ -e "$TMP/none.json" ] && fail "left a file" || ok

# A model that fits nowhere.
run plan -c examples/clusters/h100-node.json -w $W -m deepseek-v3 --mode colocated
expect_rc 3 "deepseek-v3 on one node"
expect_err_line '^hexplan: error: deepseek-v3 fits on no GPU set of this cluster' "fits nowhere message"

# longprompt MODEL TPOT_MS FILE: 4,000-token prompts, 64-token answers.
longprompt() {
	python3 - "$@" <<'PY'
import json, sys
json.dump({"version": 1, "model": sys.argv[1], "rate_rps": 1,
           "arrival": {"process": "poisson"},
           "prompt_tokens": {"dist": "lognormal", "mean": 4000, "p50": 3200, "max": 16000},
           "output_tokens": {"dist": "lognormal", "mean": 64, "p50": 48, "max": 256},
           "slo": {"ttft_ms": 8000, "tpot_ms": float(sys.argv[2]), "percentile": 99,
                   "attainment": 0.99}}, open(sys.argv[3], "w"))
PY
}

# Long prompts on L4s at a 40 ms TPOT: no shape sustains the SLO.  The
# simulator refused every shape the cost model chose until the capacity
# rule counted the decode batch a request shares its steps with (its TPOT
# tail); now the rule refuses them itself, with the SLO, and writes no file.
python3 -c 'import json, sys; json.dump({"version": 1, "nodes": [{"name": "l%d" % i, "gpu": "l4", "count": 2} for i in range(16)]}, open(sys.argv[1], "w"))' "$TMP/l4.json"
longprompt mixtral-8x7b 40 "$TMP/longprompt.json"
run plan -c "$TMP/l4.json" -w "$TMP/longprompt.json" --mode colocated --seed 1 -o "$TMP/l4plan.json"
expect_rc 3 "no shape sustains the SLO"
expect_err_line "^hexplan: error: mixtral-8x7b fits on no GPU set of this cluster at the SLO: .* no replica shape meets TTFT 8000 ms and TPOT 40 ms$" "refusal message"
[ -e "$TMP/l4plan.json" ] && fail "refusal left a file" || ok

# The corrections change the MILP's choice (Llama 3.1 405B on 4 + 4 nodes,
# long prompts): both choices are simulated whole, and the recorded
# whole-plan figure is what simulate --capacity finds with the plan's seed.
python3 -c 'import json, sys; json.dump({"version": 1, "nodes": [{"name": "%s%d" % (t[0], i), "gpu": t, "count": 8} for t in ("h100-sxm", "a100-80g") for i in range(4)]}, open(sys.argv[1], "w"))' "$TMP/big.json"
longprompt llama-3.1-405b 150 "$TMP/lp405.json"
run plan -c "$TMP/big.json" -w "$TMP/lp405.json" --mode colocated --seed 1 -o "$TMP/big-plan.json"
expect_rc 0 "405B colocated"
run simulate -p "$TMP/big-plan.json" -w "$TMP/lp405.json" --capacity --seed 1
expect_rc 0 "simulate the 405B plan"
python3 - "$TMP/big-plan.json" "$TMP/out" <<'PY' && ok || fail "whole-plan figure"
import json, sys
p, s = (json.load(open(f)) for f in sys.argv[1:3])
assert p["simulated"]["method"] == "plan", p["simulated"]
assert p["simulated"]["requests"] == 4000, p["simulated"]
assert abs(p["simulated"]["capacity_rps"] - s["capacity_rps"]) <= 1e-5 * s["capacity_rps"], (p["simulated"], s["capacity_rps"])
PY

run plan -c $C -w $W --objective cost
expect_rc 2 "--objective without a solver mode"
run plan -c $C -w $W --mode colocated --gap 2
expect_rc 2 "--gap out of range"
run plan -c $C -w $W --mode colocated --lp /nonexistent/dir/p.lp
expect_rc 1 "unwritable LP file"

finish
