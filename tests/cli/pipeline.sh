#!/bin/sh
# plan --mode pipeline: layer fragments joined by hops on the Helix-like
# example clusters, valid for check (every path from ingress covers each
# layer once), deterministic, simulated, refused by exports that cannot run
# it, clear errors.
. "$(dirname "$0")/../lib.sh"

W=examples/workloads/pipeline.json

for c in helix-24 helix-24-3regions; do
	run plan -c examples/clusters/$c.json -w $W --mode pipeline -o "$TMP/$c.json"
	expect_rc 0 "pipeline plan of $c"
	run check -p "$TMP/$c.json" -c examples/clusters/$c.json
	expect_rc 0 "check accepts the pipeline plan of $c"
done
run plan -c examples/clusters/helix-24-3regions.json -w $W --mode pipeline
cmp -s "$TMP/out" "$TMP/helix-24-3regions.json" && ok || fail "pipeline plan is not deterministic"

# 42 nodes, with a safety stop (it takes seconds; a slow build may hit it,
# and the plan says so).
run plan -c examples/clusters/helix-42.json -w $W --mode pipeline --time-limit 60 -o "$TMP/h42.json"
expect_rc 0 "pipeline plan of helix-42"
run check -p "$TMP/h42.json" -c examples/clusters/helix-42.json
expect_rc 0 "check accepts the pipeline plan of helix-42"

python3 - "$TMP/helix-24-3regions.json" "$TMP/h42.json" <<'PY' && ok || fail "pipeline plan shape"
import json, sys
for path in sys.argv[1:]:
    p = json.load(open(path))
    assert p["mode"] == "pipeline"
    s = p["solver"]
    assert s["engine"] == "igraph" and s["status"] in ("heuristic", "time_limit"), s
    assert s["bound"] >= s["objective"] > 0 and s["gap"] >= 0
    groups = {g["name"]: g for g in p["groups"]}
    layers = p["models"][0]["arch"]["layers"]
    assert all(len(g["stages"]) == 1 and len(g["replicas"]) == 1 for g in groups.values())
    assert all(groups[r["group"]]["stages"][0]["layers"][0] == 0 for r in p["routing"]["ingress"])
    out = {}
    for h in p["routing"]["hops"]:
        a, b = h["from"].split("/")[0][:-2], h["to"].split("/")[0][:-2]
        assert groups[a]["stages"][0]["layers"][1] == groups[b]["stages"][0]["layers"][0]
        assert h["bw_gbps"] > 0 and h["latency_ms"] >= 0
        out[a] = out.get(a, 0) + h["weight"]
    assert all(abs(v - 1) <= 1e-6 for v in out.values()), out
    # every fragment not at the end hands on
    for n, g in groups.items():
        assert g["stages"][0]["layers"][1] == layers or n in out, n
    # predicted capacity is the flow in requests/s
    assert p["predicted"]["capacity_rps"] > 0 and p["predicted"]["tpot_ms_p99"] > 0
PY

# The plans validate against the plan schema (when python3-jsonschema is here).
if python3 -c 'from jsonschema import Draft202012Validator' 2>/dev/null; then
	python3 - profiles/plan.schema.json "$TMP/helix-24.json" "$TMP/h42.json" tests/data/pipeline/helix-3regions.json <<'PY' && ok || fail "pipeline plans validate against the schema"
import json, sys
from jsonschema import Draft202012Validator
v = Draft202012Validator(json.load(open(sys.argv[1])))
for path in sys.argv[2:]:
    errs = list(v.iter_errors(json.load(open(path))))
    assert not errs, (path, errs[0].message[:200])
PY
fi
run check -p tests/data/pipeline/helix-3regions.json -c examples/clusters/helix-24-3regions.json
expect_rc 0 "check accepts the stored pipeline plan"

# Simulated: requests walk the hops and all finish.
run simulate -p "$TMP/helix-24.json" -w $W --requests 200
expect_rc 0 "simulate the pipeline plan"
[ "$(jnum requests.finished)" = "200" ] && ok || fail "all requests finish"

# Exports: no engine runs fragments joined by hops; dot draws them.
for t in launch k8s kserve; do
	run export -p "$TMP/helix-24.json" --to $t --lossy -o "$TMP/x-$t"
	expect_rc 1 "export --to $t refuses a pipeline plan"
	expect_err_line "^hexplan: error: .*helix-24.json: group g[0-9]+ holds layers \[[0-9]+, [0-9]+\) of llama-2-70b: a pipeline plan's fragments, joined by hops, cannot be exported to $t \(--to dot draws it\)$" "export --to $t message"
	[ -e "$TMP/x-$t" ] && fail "export --to $t left output" || ok
done
run export -p "$TMP/helix-24.json" --to dot
expect_rc 0 "export --to dot draws a pipeline plan"
expect_out 'hop' "dot shows the hops"

# check: a fragment with its hops removed is a dead end.
python3 - "$TMP/helix-24.json" "$TMP/dead.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
first = p["routing"]["hops"][0]["from"]
p["routing"]["hops"] = [h for h in p["routing"]["hops"] if h["from"] != first]
json.dump(p, open(sys.argv[2], "w"), indent=2)
PY
run check -p "$TMP/dead.json" -c examples/clusters/helix-24.json
expect_rc 1 "check rejects a dead end"
grep -Eq 'dead end: replica "g[0-9]+r0" ends at layer [0-9]+ of 80 and no hop leaves it$' "$TMP/err" && ok ||
	fail "dead end message"

# Errors.
run plan -c examples/clusters/helix-24.json -w $W --mode pipeline --objective cost
expect_rc 1 "--objective cost"
expect_err_line '^hexplan: error: the pipeline mode maximizes throughput: it takes --objective capacity or throughput only$' "objective message"
run plan -c examples/clusters/helix-24.json -w $W --mode pipeline --lp "$TMP/x.lp"
expect_rc 1 "--lp"
expect_err_line '^hexplan: error: the pipeline mode solves no MILP: it has no --lp to write$' "lp message"
cat >"$TMP/two-t4.json" <<'JSON'
{"version": 1, "nodes": [{"name": "t0", "gpu": "t4", "count": 1}, {"name": "t1", "gpu": "t4", "count": 1}]}
JSON
run plan -c "$TMP/two-t4.json" -w $W --mode pipeline -o "$TMP/none.json"
expect_rc 3 "too little memory"
expect_err_line '^hexplan: error: memory: the nodes hold [0-9]+ of the 80 layers of llama-2-70b in all \(each with a KV reserve of [0-9]+ tokens\); no placement covers the model$' "memory message"
[ -e "$TMP/none.json" ] && fail "infeasible plan left a file" || ok

# Measured per-layer costs: T4s measured far slower than the cost model
# prices them lose their layers; the plan stays valid.
run plan -c examples/clusters/helix-24.json -w $W --mode pipeline --layer-costs tests/data/layer-costs/t4-slow.csv -o "$TMP/lc.json"
expect_rc 0 "pipeline plan with --layer-costs"
run check -p "$TMP/lc.json" -c examples/clusters/helix-24.json
expect_rc 0 "check accepts the plan made with --layer-costs"
python3 - "$TMP/lc.json" "$TMP/helix-24.json" <<'PY' && ok || fail "slow T4s hold fewer layers"
import json, sys
def t4_layers(path):
    p = json.load(open(path))
    return sum(g["stages"][0]["layers"][1] - g["stages"][0]["layers"][0]
               for g in p["groups"] if g["stages"][0]["gpu"] == "t4")
assert t4_layers(sys.argv[1]) < t4_layers(sys.argv[2]), (t4_layers(sys.argv[1]), t4_layers(sys.argv[2]))
PY
printf 'gpu,tp,phase,tokens,ms\n' >"$TMP/bad-header.csv"
run plan -c examples/clusters/helix-24.json -w $W --mode pipeline --layer-costs "$TMP/bad-header.csv"
expect_rc 1 "--layer-costs with a bad header"
expect_err_line '^hexplan: error: .*bad-header.csv:1: expected the header "gpu,tp,phase,tokens,context,ms"$' "bad header message"
printf 'gpu,tp,phase,tokens,context,ms\nt4,1,decode,1,0,3\nt4,1,linear,1,0,3\n' >"$TMP/bad-phase.csv"
run plan -c examples/clusters/helix-24.json -w $W --mode pipeline --layer-costs "$TMP/bad-phase.csv"
expect_rc 1 "--layer-costs with a bad phase"
expect_err_line '^hexplan: error: .*bad-phase.csv:3: phase must be decode or prefill, not "linear"$' "bad phase message"
printf 'gpu,tp,phase,tokens,context,ms\nt4,1,decode,1,0,-3\n' >"$TMP/bad-ms.csv"
run plan -c examples/clusters/helix-24.json -w $W --mode pipeline --layer-costs "$TMP/bad-ms.csv"
expect_rc 1 "--layer-costs with a negative time"
expect_err_line '^hexplan: error: .*bad-ms.csv:2: ms must be a positive number, not "-3"$' "bad ms message"
run plan -c examples/clusters/helix-24.json -w $W --mode colocated --layer-costs tests/data/layer-costs/t4-slow.csv
expect_rc 2 "--layer-costs outside pipeline"
grep -q '^hexplan: error: --layer-costs is for --mode pipeline$' "$TMP/err" && ok || fail "--layer-costs usage message"

# One node that holds the model many times over: a single-node pipeline
# (first and last at once), not a refusal for the two end layers a middle
# fragment cannot hold.
cat >"$TMP/h200.json" <<'EOF2'
{"version": 1, "nodes": [{"name": "n0", "gpu": "h200", "count": 8}]}
EOF2
run plan -c "$TMP/h200.json" -m llama-3.1-8b -w examples/workloads/chat.json --mode pipeline -o "$TMP/h200-plan.json"
expect_rc 0 "pipeline plan of one node holding the whole model"
run check -p "$TMP/h200-plan.json" -c "$TMP/h200.json"
expect_rc 0 "check accepts the one-node pipeline plan"
python3 - "$TMP/h200-plan.json" <<'PY' && ok || fail "one-node pipeline covers [0, L)"
import json, sys
p = json.load(open(sys.argv[1]))
(g,) = p["groups"]
assert g["stages"][0]["layers"] == [0, p["models"][0]["arch"]["layers"]], g["stages"]
PY

finish
