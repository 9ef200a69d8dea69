#!/bin/sh
# plan --mode compose: what to rent from offers of six GPU types, routed by
# length class; check accepts it against the same cluster file; budgets,
# availability and bad inputs.
. "$(dirname "$0")/../lib.sh"

C=examples/clusters/rent-six.json
W=examples/workloads/chat.json

run plan -c $C -w $W --mode compose -o "$TMP/p.json"
expect_rc 0 "compose plan"
run check -p "$TMP/p.json" -c $C
expect_rc 0 "check accepts the composed plan against the offers"
run plan -p "$TMP/p.json"
[ "$(jnum mode)" = "compose" ] && ok || fail "mode"
[ "$(jnum solver.status)" = "optimal" ] && ok || fail "status $(jnum solver.status)"
python3 - "$TMP/p.json" "$C" <<'PY' && ok || fail "composed plan: rent, classes, routes"
import json, sys
p, c = (json.load(open(f)) for f in sys.argv[1:3])
offers = c["offers"]
# Rent: whole nodes of offers, within availability, priced by the offer.
used = {}
for g in p["groups"]:
    for r in g["replicas"]:
        for st in r["placement"]:
            for ref in st:
                node = ref.split(":")[0]
                assert node.startswith("offer"), node
                used.setdefault(int(node[5:].split("-")[0]), set()).add(node)
assert {r["offer"] for r in p["rent"]} == set(used), (p["rent"], used)
total = 0
for r in p["rent"]:
    o = offers[r["offer"]]
    assert r["gpu"] == o["gpu"] and r["gpus"] <= o["max_count"], r
    assert r["nodes"] == len(used[r["offer"]]), r
    assert abs(r["usd_per_hour"] - r["gpus"] * o["usd_per_hour"]) < 1e-6, r
    total += r["usd_per_hour"]
assert abs(total - p["predicted"]["usd_per_hour"]) < 1e-4, (total, p["predicted"])
assert abs(p["solver"]["objective"] - total) < 1e-4
assert p["predicted"]["usd_per_m_tokens"] > 0
# Nine length classes; each routed with weights summing to 1.
cls = p["routing"]["classes"]
assert len(cls) == 9, cls
for k in cls:
    ws = [r["weight"] for r in p["routing"]["ingress"] if r.get("class") == k["name"]]
    assert ws and abs(sum(ws) - 1) < 1e-9, (k, ws)
PY

# The plan format's schema knows rent and length classes.
if python3 -c 'from jsonschema import Draft202012Validator' 2>/dev/null; then
	python3 - profiles/plan.schema.json "$TMP/p.json" <<'PY' && ok || fail "composed plan against the schema"
import json, sys
from jsonschema import Draft202012Validator
errs = list(Draft202012Validator(json.load(open(sys.argv[1]))).iter_errors(json.load(open(sys.argv[2]))))
assert not errs, errs[0].message
PY
fi

# Exports take the same cluster file (offers expanded alike); routers see no
# length class, so the class routing is lossy.
run export -p "$TMP/p.json" --to launch -c $C --format json -o "$TMP/launch.json"
expect_rc 1 "export of class routing without --lossy"
run export -p "$TMP/p.json" --to launch -c $C --format json --lossy -o "$TMP/launch.json"
expect_rc 0 "export launch --lossy with the offers' cluster"
grep -q 'offer[0-9]*-0' "$TMP/launch.json" && ok || fail "launch commands name the rented nodes"

# Deterministic: the same inputs give the same bytes.
run plan -c $C -w $W --mode compose
cmp -s "$TMP/out" "$TMP/p.json" && ok || fail "compose plan is not deterministic"

# The simulator routes by the plan's classes and the plan meets the SLO.
run simulate -p "$TMP/p.json" -w $W --seed 5
expect_rc 0 "simulate the composed plan"
python3 - "$TMP/out" <<'PY' && ok || fail "composed plan meets the attainment target"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["slo_attainment"] >= 0.99, r["slo_attainment"]
PY

# A budget: the most rate within it, never more rent.
run plan -c $C -w $W --mode compose --budget 20 -o "$TMP/b.json"
expect_rc 0 "compose with a budget"
run check -p "$TMP/b.json" -c $C
expect_rc 0 "check accepts the budget plan"
python3 - "$TMP/b.json" "$TMP/p.json" <<'PY' && ok || fail "budget plan"
import json, sys
b, p = (json.load(open(f)) for f in sys.argv[1:3])
assert b["predicted"]["usd_per_hour"] <= 20 + 1e-9, b["predicted"]
assert b["solver"]["objective"] > 1, b["solver"]   # kappa: more than the workload's rate
assert b["predicted"]["capacity_rps"] > p["predicted"]["capacity_rps"]
PY

# Owned nodes beside offers: owned GPUs first (free at the margin).
run plan -c examples/clusters/owned-plus-offers.json -w examples/workloads/classes.json -m llama-3.1-8b --mode compose -o "$TMP/o.json"
expect_rc 0 "compose on owned nodes plus offers"
run check -p "$TMP/o.json" -c examples/clusters/owned-plus-offers.json
expect_rc 0 "check accepts the mixed-fleet plan"
python3 - "$TMP/o.json" <<'PY' && ok || fail "mixed fleet"
import json, sys
p = json.load(open(sys.argv[1]))
nodes = {ref.split(":")[0] for g in p["groups"] for r in g["replicas"] for st in r["placement"] for ref in st}
assert "own-a100-0" in nodes, nodes
# Named workload classes route by name; no length ranges recorded.
assert "classes" not in p["routing"]
assert {r["class"] for r in p["routing"]["ingress"]} == {"short", "long"}
PY

# Owned nodes only (issue 20): the rent is $0, and the plan states what the
# owned GPUs it uses cost at the cluster's prices (the GPUs its replicas
# hold, each at its profile's price).
run plan --mode compose -c examples/clusters/mixed.json -w examples/workloads/chat.json -m llama-3.1-70b --format table
expect_rc 0 "compose on owned nodes"
expect_out '^cost: \$0\.00/hour of rent, \$0\.0000 per million tokens; the owned GPUs used cost \$[0-9]+\.[0-9][0-9]/hour at the cluster.s prices \(free at the margin, not counted\)$' "owned GPUs' price stated"
table_owned=$(sed -n 's/.*the owned GPUs used cost \$\([0-9.]*\)\/hour.*/\1/p' "$TMP/out")
if grep -q 'ttft p99 0\.0 ms' "$TMP/out"; then fail "compose on owned nodes: ttft p99 0.0 ms"; else ok; fi
run plan --mode compose -c examples/clusters/mixed.json -w examples/workloads/chat.json -m llama-3.1-70b
cp "$TMP/out" "$TMP/owned.json"
python3 - "$TMP/owned.json" profiles/gpus.json "$table_owned" <<'PY' && ok || fail "owned_usd_per_hour is the used GPUs' price"
import json, sys
p, g = (json.load(open(f)) for f in sys.argv[1:3])
price = {x["name"]: x["usd_per_hour"] for x in g["gpus"]}
usd = sum(price[st["gpu"]] * len(ref) for gr in p["groups"] for r in gr["replicas"]
          for st, ref in zip(gr["stages"], r["placement"]))
owned = p["predicted"]["owned_usd_per_hour"]
assert usd > 0 and abs(owned - usd) <= 1e-6 * usd, (owned, usd)
assert abs(float(sys.argv[3]) - owned) <= 0.005, (sys.argv[3], owned)
PY
approx "$(jnum predicted.usd_per_hour)" 0 1e-9 && ok || fail "compose rent on owned nodes $(jnum predicted.usd_per_hour)"

# The independent check catches a plan that rents less than it places.
python3 - "$TMP/p.json" "$TMP/bad.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["rent"][0]["nodes"] += 1
json.dump(p, open(sys.argv[2], "w"))
PY
run check -p "$TMP/bad.json" -c $C
expect_rc 1 "check: rent that disagrees with the placements"
grep -Eq '^hexplan: error: .*bad.json: /rent/0: rents [0-9]+ nodes \([0-9]+ GPUs\) of offer [0-9]+, but the placements use' "$TMP/err" && ok || fail "rent violation message"
# ...and a plan that places GPUs beyond what an offer has.
python3 - "$TMP/p.json" "$TMP/over.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
r = p["groups"][0]["replicas"][0]["placement"][0]
node = r[0].split(":")[0]
r[0] = node.split("-")[0] + "-99:0"
json.dump(p, open(sys.argv[2], "w"))
PY
run check -p "$TMP/over.json" -c $C
expect_rc 1 "check: GPUs beyond an offer's availability"
grep -Eq 'the cluster has no node "offer[0-9]+-99"' "$TMP/err" && ok || fail "availability violation message"

# Bad inputs.
run plan -c $C -w $W --mode compose --budget 0.5 -o "$TMP/none.json"
expect_rc 3 "budget too small"
expect_err_line '^hexplan: error: the budget of 0.5 USD/h is too small: serving every class of the workload at the SLO takes at least [0-9.]+ USD/h of rent$' "budget message"
[ -e "$TMP/none.json" ] && fail "left a file" || ok
sed 's/"rate_rps": 20/"rate_rps": 50000/' $W >"$TMP/heavy.json"
run plan -c $C -w "$TMP/heavy.json" --mode compose
expect_rc 3 "rate above all offers"
expect_err_line "^hexplan: error: the workload's rate of 50000 req/s is above what all the nodes and offers carry at the SLO at [0-9.]+% utilization \(at most [0-9.]+ req/s\)$" "rate message"
run plan -c $C -w $W --mode compose --budget -3
expect_rc 2 "negative budget"
run plan -c $C -w $W --mode colocated --budget 10
expect_rc 2 "--budget without compose"
[ "$(head -1 "$TMP/err")" = "hexplan: error: --budget needs --mode compose or bo" ] && ok || fail "--budget without compose message"
run plan -c examples/clusters/h100-node.json -w $W -m deepseek-v3 --mode compose
expect_rc 3 "a model that fits nowhere"
expect_err_line '^hexplan: error: deepseek-v3 fits on no GPU set of the nodes and offers' "fits nowhere message"
printf '{"version": 1, "nodes": [{"name": "offer0-0", "gpu": "l4", "count": 1}], "offers": [{"gpu": "l4", "max_count": 4}]}' >"$TMP/clash.json"
run plan -c "$TMP/clash.json" -w $W --mode compose
expect_rc 1 "a node named like an offer's node"
expect_err_line '^hexplan: error: node "offer0-0" bears a name that offers' "name clash message"

# Spill-over (issue 18): the l40s offer sold out (max_count 0), compose
# rents another type, says so on stderr and lists the substitutions against
# the preferred plan (availability ignored: the l40s one), and check
# accepts the plan.
S=examples/clusters/cloud-offers.json
python3 - "$S" "$TMP/soldout.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["offers"][2]["max_count"] = 0
json.dump(c, open(sys.argv[2], "w"))
PY
run plan -c $S -w $W -m llama-3.1-8b --mode compose -o "$TMP/pref.json"
expect_rc 0 "compose with every offer available"
[ ! -s "$TMP/err" ] && ok || fail "no spill-over note when nothing is short: $(cat "$TMP/err")"
run plan -c "$TMP/soldout.json" -w $W -m llama-3.1-8b --mode compose -o "$TMP/spill.json" --lp "$TMP/spill.lp"
expect_rc 0 "compose with the l40s offer sold out"
# --lp is the plan's own program: no pool of l40s nodes (4 at 0.86 USD/h)
# from the preferred plan's
grep -q '3\.44 x_' "$TMP/spill.lp" && fail "--lp wrote the preferred plan's program" || ok
expect_err_line '^hexplan: plan: spill-over: short: l40s \(0 GPUs of the [0-9]+ preferred\); used instead: [a-z0-9-]+ \([0-9]+ GPUs, 0 preferred\); \+[0-9.]+ USD/h against the preferred plan.s [0-9.]+ USD/h$' "spill-over note"
run check -p "$TMP/spill.json" -c "$TMP/soldout.json"
expect_rc 0 "check accepts the plan with substitutions"
python3 - "$TMP/pref.json" "$TMP/spill.json" <<'PY' && ok || fail "substitutions against the preferred plan"
import json, sys
pref, p = (json.load(open(f)) for f in sys.argv[1:3])
assert "substitutions" not in pref
assert {r["gpu"] for r in pref["rent"]} == {"l40s"}, pref["rent"]
assert all(r["gpu"] != "l40s" for r in p["rent"]), p["rent"]
s = p["substitutions"]
assert abs(s["preferred_usd_per_hour"] - pref["predicted"]["usd_per_hour"]) < 1e-6, s
assert abs(s["usd_per_hour_delta"] - (p["predicted"]["usd_per_hour"] - s["preferred_usd_per_hour"])) < 1e-6, s
rows = {r["gpu"]: r for r in s["gpus"]}
used = sum(len(st) for g in pref["groups"] for r in g["replicas"] for st in r["placement"])
assert rows["l40s"] == {"gpu": "l40s", "preferred_gpus": used, "gpus": 0}, rows
other = [r for r in s["gpus"] if r["gpu"] != "l40s"]
assert other and all(r["gpus"] > r["preferred_gpus"] == 0 for r in other), other
PY
# A row that disagrees with the placements, and a type listed twice.
python3 - "$TMP/spill.json" "$TMP/spill-bad.json" "$TMP/spill-twice.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["substitutions"]["gpus"][0]["gpus"] += 1
json.dump(p, open(sys.argv[2], "w"))
p["substitutions"]["gpus"][0]["gpus"] -= 1
p["substitutions"]["gpus"].append(p["substitutions"]["gpus"][0])
json.dump(p, open(sys.argv[3], "w"))
PY
run check -p "$TMP/spill-bad.json" -c "$TMP/soldout.json"
expect_rc 1 "check: substitutions that disagree with the placements"
grep -Eq '^hexplan: error: .*spill-bad.json: /substitutions/gpus/0/gpus: [0-9]+, but the plan uses [0-9]+ [a-z0-9-]+ GPUs$' "$TMP/err" && ok || fail "substitution violation message: $(cat "$TMP/err")"
run check -p "$TMP/spill-twice.json" -c "$TMP/soldout.json"
expect_rc 1 "a GPU type listed twice"
expect_err_line '^hexplan: error: .*spill-twice.json: /substitutions/gpus/[0-9]+: GPU type "[a-z0-9-]+" is listed twice$' "listed twice message"

finish
