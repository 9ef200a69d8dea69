#!/bin/sh
# check --tolerate-failures K (N+1): after the usual verification, the plan
# is re-routed as replan does, starting nothing, on the cluster less each
# set of K nodes; a set fails when what is kept falls short of the rate
# with replan's 90% utilization margin.
. "$(dirname "$0")/../lib.sh"

C=examples/clusters/mixed.json
W=examples/workloads/chat.json

# A capacity plan at a rate near what it carries (~646 req/s at the SLO):
# losing a node leaves too little.  The same plan at the workload's own
# 20 req/s survives the loss of any node.
sed 's/"rate_rps": 20/"rate_rps": 550/' $W >"$TMP/w600.json"
hx plan -c $C -w "$TMP/w600.json" --mode colocated -o "$TMP/plan.json" 2>/dev/null || fail "colocated plan"

run check -p "$TMP/plan.json" -c $C -w "$TMP/w600.json" --tolerate-failures 1
expect_rc 1 "a plan without insurance fails N+1"
grep -Eq '^hexplan: check: after losing node "h100-0": [0-9.]+ req/s at the SLO, short of the 611\.111 req/s the rate of 550 req/s needs at 90% utilization$' "$TMP/err" &&
	ok || fail "the lost node is named"
grep -q '^hexplan: check: tolerate-failures 1: 10 sets checked, 6 fail$' "$TMP/err" && ok || fail "summary line"
python3 - "$TMP/out" <<'PY' && ok || fail "the JSON report"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["valid"] is True and r["tolerate_failures"]
assert t["k"] == 1 and t["sets_checked"] == 10 and t["sets_failing"] == 6, t
assert t["needs_rps"] == 611.111 or abs(t["needs_rps"] - 550 / 0.9) < 1e-3, t
lost = sorted(n for f in t["failing"] for n in f["nodes"])
assert lost == ["a100-0", "a100-1", "a100-2", "a100-3", "h100-0", "h100-1"], lost
assert all(f["capacity_rps"] < 550 / 0.9 for f in t["failing"])
PY
cp "$TMP/out" "$TMP/report600.json"

run check -p "$TMP/plan.json" -c $C -w $W --tolerate-failures 1
expect_rc 0 "the same plan at a low rate survives any one node"
expect_err_line '^hexplan: check: tolerate-failures 1: 10 sets checked, 0 fail$' "N+1 holds"

# The check re-routes, it does not re-plan: replan (which may start
# replicas) agrees with it on what the kept replicas carry.
python3 - $C "$TMP/minus.json" h100-0 <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["nodes"] = [n for n in c["nodes"] if n["name"] != sys.argv[3]]
json.dump(c, open(sys.argv[2], "w"))
PY
hx replan -p "$TMP/plan.json" -c "$TMP/minus.json" -w "$TMP/w600.json" --moves "$TMP/moves.json" \
	>/dev/null 2>&1
python3 - "$TMP/moves.json" "$TMP/report600.json" <<'PY' && ok || fail "replan's capacity after the loss"
import json, sys
m, r = (json.load(open(f)) for f in sys.argv[1:3])
# Every GPU is used: replan has nowhere to start a replica either.
assert m["started"] == 0 and m["stopped"] == 8, m
f = [f for f in r["tolerate_failures"]["failing"] if f["nodes"] == ["h100-0"]][0]
assert abs(f["capacity_rps"] - m["capacity_rps"]["after"]) < 1e-3, (f, m["capacity_rps"])
PY

# A node the plan does not use is named and skipped.
hx plan -c $C -w $W --mode colocated --objective cost -o "$TMP/cost.json" 2>/dev/null || fail "cost plan"
run check -p "$TMP/cost.json" -c $C -w $W --tolerate-failures 1 --format table
expect_rc 1 "a one-node plan fails N+1"
grep -q '^hexplan: check: 9 nodes the plan does not use, whose loss changes nothing, not checked: "h100-1", ' "$TMP/err" &&
	ok || fail "unused nodes named"
grep -q '^hexplan: check: after losing node "h100-0": 0.000 req/s at the SLO' "$TMP/err" && ok || fail "nothing survives"
grep -qx 'tolerate-failures 1: 1 sets checked, 1 fail' "$TMP/out" && ok || fail "table line: $(tail -n 1 "$TMP/out")"

# A composed plan rents offers' nodes: the reduced clusters are its
# offers expanded (as check sees them), less the lost nodes; the unused
# ones are named ten at most.
hx plan -c examples/clusters/rent-six.json -w $W --mode compose -o "$TMP/comp.json" 2>/dev/null ||
	fail "compose plan"
run check -p "$TMP/comp.json" -c examples/clusters/rent-six.json -w $W --tolerate-failures 1
expect_rc 1 "composed plan without insurance"
grep -Eq '^hexplan: check: [0-9]+ nodes the plan does not use, whose loss changes nothing, not checked: ("offer[0-9]+-[0-9]+", ){9}"offer[0-9]+-[0-9]+" and [0-9]+ more$' "$TMP/err" &&
	ok || fail "unused offer nodes, ten named"
grep -Eq '^hexplan: check: after losing node "offer[0-9]+-[0-9]+": ' "$TMP/err" && ok || fail "lost offer node named"
python3 - "$TMP/out" <<'PY' && ok || fail "composed plan: report lists every unused node"
import json, sys
t = json.load(open(sys.argv[1]))["tolerate_failures"]
assert len(t["nodes_not_used"]) > 10 and t["sets_checked"] >= 1, t
PY

# K = 2: every pair of the 10 nodes (45, under the cap of 64).
run check -p "$TMP/plan.json" -c $C -w $W --tolerate-failures 2
expect_rc 0 "N+2 at a low rate"
expect_err_line '^hexplan: check: tolerate-failures 2: 45 sets checked, 0 fail$' "K=2 counts its sets"
# K = 3: 120 sets, more than the cap: the largest of each GPU type and a
# seeded sample, 64 in all; the same seed, the same sets.
run check -p "$TMP/plan.json" -c $C -w "$TMP/w600.json" --tolerate-failures 3 --seed 5
expect_rc 1 "N+3 near capacity"
# The three largest a100 nodes (8 GPUs each, then by name) come first; h100
# has two nodes only, so the samples lose them with others.
head -n 1 "$TMP/err" | grep -q '^hexplan: check: after losing nodes "a100-0", "a100-1", "a100-2": ' &&
	ok || fail "the largest of a GPU type first"
grep -q '^hexplan: check: tolerate-failures 3: 64 sets checked, 64 fail$' "$TMP/err" && ok || fail "K=3 summary"
[ "$(jnum tolerate_failures.seed)" = 5 ] && ok || fail "the seed is reported"
cp "$TMP/err" "$TMP/err5"
run check -p "$TMP/plan.json" -c $C -w "$TMP/w600.json" --tolerate-failures 3 --seed 5
cmp -s "$TMP/err" "$TMP/err5" && ok || fail "the same seed draws other sets"
run check -p "$TMP/plan.json" -c $C -w "$TMP/w600.json" --tolerate-failures 3 --seed 6
cmp -s "$TMP/err" "$TMP/err5" && fail "another seed draws the same sets" || ok

# The man page's example: the cascade plan holds N+1, the baseline plan
# (24 of 64 GPUs) does not, naming the four nodes it uses.
run check -p tests/data/plans/mixed-cascade.json -c $C -w examples/workloads/cascade.json --tolerate-failures 1
expect_rc 0 "cascade plan holds N+1"
run check -p tests/data/plans/mixed-baseline.json -c $C -w $W --tolerate-failures 1
expect_rc 1 "baseline plan fails N+1"
[ "$(grep -c '^hexplan: check: after losing node ' "$TMP/err")" = 4 ] && ok || fail "baseline: four nodes named"
grep -q '^hexplan: check: 6 nodes the plan does not use' "$TMP/err" && ok || fail "baseline: unused nodes"

# Misuse: exit 2, naming why.
run check -p "$TMP/plan.json" -c $C --tolerate-failures 1
expect_rc 2 "no workload"
grep -q '^hexplan: error: --tolerate-failures needs -w workload.json: the rate the nodes left must carry$' "$TMP/err" &&
	ok || fail "no workload: message"
run check -p "$TMP/plan.json" -c $C -w $W
expect_rc 2 "-w alone"
grep -q '^hexplan: error: -w workload.json goes with --tolerate-failures K$' "$TMP/err" && ok || fail "-w alone: message"
for k in 0 -1 1.5 x ""; do
	run check -p "$TMP/plan.json" -c $C -w $W --tolerate-failures "$k"
	expect_rc 2 "--tolerate-failures '$k'"
	grep -q "^hexplan: error: --tolerate-failures must be an integer from 1 to 4095, not \"$k\"\$" "$TMP/err" &&
		ok || fail "--tolerate-failures '$k': message"
done
run check -p "$TMP/plan.json" -c $C -w $W --tolerate-failures 10
expect_rc 2 "K as many as the nodes"
grep -q '^hexplan: error: --tolerate-failures must be less than the cluster.s 10 nodes, not 10$' "$TMP/err" &&
	ok || fail "K too large: message"
run check -p "$TMP/plan.json" -c $C -w $W --tolerate-failures 1 --seed x
expect_rc 2 "bad seed"
# A pipeline plan places lost layers again: it cannot be insured by
# routing alone, and says so.
run check -p tests/data/pipeline/helix-3regions.json -c examples/clusters/helix-24-3regions.json \
	-w examples/workloads/pipeline.json --tolerate-failures 1
expect_rc 1 "pipeline plan"
grep -q "^hexplan: error: a pipeline plan's lost layers are placed again: it cannot be re-routed without starting replicas\$" "$TMP/err" &&
	ok || fail "pipeline plan: message"

# --- plan --tolerate-failures K: the planner side --------------------------
# The plain cost plan serves 20 req/s on one H100 GPU and fails N+1 with its
# node named; the insured plan of the same inputs passes check's own
# evaluation, and costs more.
hx plan -c $C -w $W --mode colocated --objective cost -o "$TMP/plain.json" 2>/dev/null || fail "plain cost plan"
run check -p "$TMP/plain.json" -c $C -w $W --tolerate-failures 1
expect_rc 1 "the plain plan fails N+1"
grep -q '^hexplan: check: after losing node "h100-0": 0.000 req/s at the SLO, short of the 22.222 req/s ' "$TMP/err" &&
	ok || fail "the plain plan: the lost node named"
run plan -c $C -w $W --mode colocated --objective cost --tolerate-failures 1 -o "$TMP/n1.json"
expect_rc 0 "an N+1 plan"
grep -Eq '^hexplan: plan: tolerate-failures 1: [0-9]+ sets checked, 0 fail after [1-9][0-9]* rounds?; insurance \+[0-9.]+ \$/hour, \+[0-9]+ GPUs? \(plain plan \$2\.99/hour on 1 GPU, insured \$[0-9.]+/hour on [0-9]+\)$' "$TMP/err" &&
	ok || fail "the insurance said: $(cat "$TMP/err")"
run check -p "$TMP/n1.json" -c $C -w $W --tolerate-failures 1
expect_rc 0 "the N+1 plan passes check --tolerate-failures 1"
grep -Eq '^hexplan: check: tolerate-failures 1: [0-9]+ sets checked, 0 fail$' "$TMP/err" && ok || fail "N+1 holds"
# The record: the plain plan's figures are the plain plan's, the insured
# ones the plan's own, and the insurance only adds (every plain replica is
# there, on the same GPUs).
python3 - "$TMP/plain.json" "$TMP/n1.json" <<'PY' && ok || fail "the tolerate record"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
def gpus(p):
    return sorted((s["gpu"],) + tuple(x.split(":")) for g in p["groups"] for r in g["replicas"]
                  for s, pl in zip(g["stages"], r["placement"]) for x in pl)
t = b["tolerate"]
assert t["k"] == 1 and "seed" not in t and t["rounds"] >= 1 and t["sets_checked"] >= 2, t
assert t["plain"] == {"usd_per_hour": a["predicted"]["usd_per_hour"], "gpus": len(gpus(a))}, t
assert t["insured"] == {"usd_per_hour": b["predicted"]["usd_per_hour"], "gpus": len(gpus(b))}, t
assert t["insurance"]["gpus"] == t["insured"]["gpus"] - t["plain"]["gpus"] > 0, t
assert abs(t["insurance"]["usd_per_hour"] - (t["insured"]["usd_per_hour"] - t["plain"]["usd_per_hour"])) < 1e-6, t
assert t["insurance"]["usd_per_hour"] > 0, t
assert set(gpus(a)) <= set(gpus(b)), "the plain plan's GPUs are kept"
assert len({x[1] for x in gpus(b)}) >= 2, "an N+1 plan spans nodes"
assert b["solver"]["status"] == "heuristic" and b["simulated"]["method"] == "plan", b["solver"]
PY
hx plan -c $C -w $W --mode colocated --objective cost --tolerate-failures 1 -o "$TMP/n1b.json" 2>/dev/null
cmp -s "$TMP/n1.json" "$TMP/n1b.json" && ok || fail "the same inputs, another plan"
run plan -p "$TMP/n1.json" --format table
grep -Eq '^tolerate-failures 1: [0-9]+ sets checked; insurance \+[0-9.]+ \$/hour, \+[0-9]+ GPUs? \(plain plan \$2\.99/hour on 1 GPU\)$' "$TMP/out" &&
	ok || fail "the table's tolerate line"

# check verifies the record against the plan.
python3 - "$TMP/n1.json" "$TMP/lie.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["tolerate"]["insurance"]["usd_per_hour"] += 1
json.dump(p, open(sys.argv[2], "w"))
PY
run check -p "$TMP/lie.json" -c $C
expect_rc 1 "a tolerate record that does not add up"
grep -q '/tolerate/insurance/usd_per_hour: .*, but the insured plan costs .* USD/h and the plain plan 2.99: ' "$TMP/err" &&
	ok || fail "the insurance's price checked: $(cat "$TMP/err")"
python3 - "$TMP/n1.json" "$TMP/lie2.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["tolerate"]["seed"] = 3
json.dump(p, open(sys.argv[2], "w"))
PY
run plan -p "$TMP/lie2.json"
expect_rc 1 "a seed with K = 1"
grep -q '/tolerate/seed: K = 1 removes every node in turn: it draws nothing' "$TMP/err" && ok || fail "seed with K = 1: message"

# K = 2 draws its sets with the seed; the plan says which.
run plan -c $C -w $W --mode colocated --objective cost --tolerate-failures 2 --seed 4 -o "$TMP/n2.json"
expect_rc 0 "an N+2 plan"
run check -p "$TMP/n2.json" -c $C -w $W --tolerate-failures 2 --seed 4
expect_rc 0 "the N+2 plan passes check --tolerate-failures 2 with its seed"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tolerate"]; assert t["k"] == 2 and t["seed"] == 4, t' \
	"$TMP/n2.json" && ok || fail "K = 2: the seed recorded"

# A composed plan: nodes are rented whole, so the insurance takes the
# spare GPUs of what is rented and the cheapest node type, not the fewest
# replicas (one H100 would rent an 8-GPU node at $23.92/hour).
run plan -c examples/clusters/rent-six.json -w $W --mode compose --tolerate-failures 1 -o "$TMP/c1.json"
expect_rc 0 "an N+1 composed plan"
run check -p "$TMP/c1.json" -c examples/clusters/rent-six.json -w $W --tolerate-failures 1
expect_rc 0 "the composed N+1 plan passes check"
python3 - "$TMP/comp.json" "$TMP/c1.json" <<'PY' && ok || fail "the composed insurance: its rent"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
t = b["tolerate"]
assert t["plain"]["usd_per_hour"] == a["predicted"]["usd_per_hour"], (t, a["predicted"])
assert b["predicted"]["usd_per_hour"] == round(sum(r["usd_per_hour"] for r in b["rent"]), 6)
assert 0 < t["insurance"]["usd_per_hour"] < 23.92, t
PY

# Where no insurance fits: a capacity plan near what the cluster carries
# uses every GPU; exit 3 names the set, and no plan is written.
run plan -c $C -w "$TMP/w600.json" --mode colocated --tolerate-failures 1 -o "$TMP/none.json"
expect_rc 3 "no N+1 plan on these inputs"
expect_err_line '^hexplan: error: no plan found that tolerates the loss of any 1 node: after losing node "h100-0" the replicas carry [0-9.]+ req/s at the SLO, short of the 611\.111 req/s the rate of 550 req/s needs at 90% utilization, and the GPUs the plan leaves free add no replica$' "the set named"
[ ! -e "$TMP/none.json" ] && ok || fail "a plan written after exit 3"

# Misuse: exit 2, the first line of stderr saying why (the usage follows).
grep_err() { head -n 1 "$TMP/err" | grep -Eq -- "$1" && ok || fail "$2: $(head -n 1 "$TMP/err")"; }
run plan -c $C -w $W --tolerate-failures 1
expect_rc 2 "baseline"
grep_err '^hexplan: error: --tolerate-failures is for --mode colocated or compose$' "other modes refused"
run plan -c examples/clusters/rent-six.json -w $W --mode compose --budget 10 --tolerate-failures 1
expect_rc 2 "with --budget"
grep_err '^hexplan: error: --tolerate-failures adds replicas beyond what --budget allows: give one of them$' "--budget refused"
run plan -c $C -w $W --mode colocated --tolerate-failures 10
expect_rc 2 "K as many as the nodes"
grep_err '^hexplan: error: --tolerate-failures must be less than the cluster.s 10 nodes, not 10$' "K too large"
for k in 0 x; do
	run plan -c $C -w $W --mode colocated --tolerate-failures "$k"
	expect_rc 2 "plan --tolerate-failures '$k'"
	grep_err "^hexplan: error: --tolerate-failures must be an integer from 1 to 4095, not \"$k\"\$" "bad K"
done

finish
