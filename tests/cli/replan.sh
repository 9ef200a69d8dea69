#!/bin/sh
# replan: after a node vanishes, nodes appear or the workload changes, keep
# every replica whose GPUs survive (untouched), re-route when that carries
# the rate, else start the fewest new replicas; report the moves.
. "$(dirname "$0")/../lib.sh"

C=examples/clusters/mixed.json
W=examples/workloads/chat.json

hx plan -c $C -w $W --mode colocated -o "$TMP/old.json" || fail "colocated plan"
python3 - $C "$TMP/minus.json" l40s-1 <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["nodes"] = [n for n in c["nodes"] if n["name"] != sys.argv[3]]
json.dump(c, open(sys.argv[2], "w"))
PY

# compare OLD NEW GONE: NEW never uses the nodes GONE (comma-separated), and every replica of OLD
# that did not use it is in NEW under the same id, group and placement.
compare() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, sys
old, new = (json.load(open(f)) for f in sys.argv[1:3])
gone = set(sys.argv[3].split(","))
def reps(p):
    return {r["id"]: (g["name"], r["placement"]) for g in p["groups"] for r in g["replicas"]}
o, n = reps(old), reps(new)
for rid, (g, pl) in n.items():
    assert all(ref.split(":")[0] not in gone for st in pl for ref in st), ("uses", gone, rid)
for rid, (g, pl) in o.items():
    if any(ref.split(":")[0] in gone for st in pl for ref in st):
        assert rid not in n or n[rid][1] != pl, rid
    else:
        assert n.get(rid) == (g, pl), ("moved", rid)
PY
}

# A node fails; the rest carries the rate: routing alone.
run replan -p "$TMP/old.json" -c "$TMP/minus.json" -w $W -o "$TMP/new.json" --moves "$TMP/moves.json"
expect_rc 0 "replan after a node failure"
expect_err_line '^hexplan: replan: kept 60 of 64 replicas; stopped 4, started 0, roles flipped 0, weights changed 3; 0 bytes of weights to load; capacity [0-9.]+ -> [0-9.]+ req/s$' "replan summary"
run check -p "$TMP/new.json" -c "$TMP/minus.json"
expect_rc 0 "check accepts the replanned plan on the new cluster"
compare "$TMP/old.json" "$TMP/new.json" l40s-1 && ok || fail "routing-only replan moved a replica or used the lost node"
python3 - "$TMP/moves.json" <<'PY' && ok || fail "moves document"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["schema"] == "hexplan.moves" and m["version"] == 1
assert m["routing_only"] is True and m["stopped"] == 4 and m["started"] == 0
assert m["bytes_to_load"] == 0
stops = [x for x in m["moves"] if x["kind"] == "stop"]
assert len(stops) == 4 and all(x["why"] == 'node "l40s-1" is gone' for x in stops), stops
w = [x for x in m["moves"] if x["kind"] == "weight"]
assert len(w) == 3 and all(x["from"] != x["to"] for x in w)
assert m["capacity_rps"]["after"] < m["capacity_rps"]["before"]
PY

# Without a workload: the same kept replicas, routes from recorded capacities.
run replan -p "$TMP/old.json" -c "$TMP/minus.json" -o "$TMP/now.json"
expect_rc 0 "replan without a workload"
compare "$TMP/old.json" "$TMP/now.json" l40s-1 && ok || fail "replan without -w"
run check -p "$TMP/now.json" -c "$TMP/minus.json"
expect_rc 0 "check accepts it"

# Deterministic.
run replan -p "$TMP/old.json" -c "$TMP/minus.json" -w $W
cmp -s "$TMP/out" "$TMP/new.json" && ok || fail "replan is not deterministic"

# The workload grows: a cost plan leaves GPUs free; the fewest new replicas
# go there, and no old replica moves.
hx plan -c $C -w $W --mode colocated --objective cost -o "$TMP/cost.json" || fail "cost plan"
sed 's/"rate_rps": 20/"rate_rps": 60/' $W >"$TMP/w60.json"
run replan -p "$TMP/cost.json" -c $C -w "$TMP/w60.json" -o "$TMP/grown.json" --moves "$TMP/m2.json"
expect_rc 0 "replan for a heavier workload"
run check -p "$TMP/grown.json" -c $C
expect_rc 0 "check accepts the grown plan"
compare "$TMP/cost.json" "$TMP/grown.json" none && ok || fail "growing moved an old replica"
python3 - "$TMP/m2.json" "$TMP/grown.json" <<'PY' && ok || fail "grown plan moves"
import json, sys
m, p = (json.load(open(f)) for f in sys.argv[1:3])
assert m["started"] >= 1 and m["stopped"] == 0 and not m["routing_only"], m
starts = [x for x in m["moves"] if x["kind"] == "start"]
assert len(starts) == m["started"] and all(x["bytes"] > 1e10 for x in starts)
assert abs(sum(x["bytes"] for x in starts) - m["bytes_to_load"]) < 1e-6 * m["bytes_to_load"]
assert p["predicted"]["capacity_rps"] >= 60 / 0.9 - 1e-6, p["predicted"]
PY

# A composed plan loses its owned node: new replicas on rented nodes.
O=examples/clusters/owned-plus-offers.json
hx plan -c $O -w $W --mode compose -o "$TMP/c.json" || fail "compose plan"
python3 - $O "$TMP/offers.json" own-a100-0 <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["nodes"] = [n for n in c["nodes"] if n["name"] != sys.argv[3]]
json.dump(c, open(sys.argv[2], "w"))
PY
run replan -p "$TMP/c.json" -c "$TMP/offers.json" -w $W -o "$TMP/c2.json"
expect_rc 0 "replan a composed plan"
run check -p "$TMP/c2.json" -c "$TMP/offers.json"
expect_rc 0 "check accepts it, rent included"
compare "$TMP/c.json" "$TMP/c2.json" own-a100-0 && ok || fail "composed replan used the lost node"
python3 - "$TMP/c.json" "$TMP/c2.json" <<'PY' && ok || fail "composed replan kept the length classes"
import json, sys
old, new = (json.load(open(f)) for f in sys.argv[1:3])
assert new["routing"]["classes"] == old["routing"]["classes"]
names = {c["name"] for c in old["routing"]["classes"]}
assert {r["class"] for r in new["routing"]["ingress"]} == names, new["routing"]["ingress"]
PY

# A disaggregated plan loses its H100 prefill nodes under a heavier load:
# a decode group turns prefill; no replica moves or starts.  (The rate is
# what the A100 nodes' NICs pass of the KV: 115 req/s.)
hx plan -c $C -w examples/workloads/code.json -m llama-3.1-8b --mode disagg -o "$TMP/dg.json" || fail "disagg plan"
python3 - $C "$TMP/noh100.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["nodes"] = [n for n in c["nodes"] if n["name"] not in ("h100-0", "h100-1")]
json.dump(c, open(sys.argv[2], "w"))
PY
sed 's/"rate_rps": 10/"rate_rps": 115/' examples/workloads/code.json >"$TMP/code115.json"
run replan -p "$TMP/dg.json" -c "$TMP/noh100.json" -w "$TMP/code115.json" -o "$TMP/dg2.json" --moves "$TMP/dgm.json"
expect_rc 0 "replan a disaggregated plan"
run check -p "$TMP/dg2.json" -c "$TMP/noh100.json"
expect_rc 0 "check accepts the re-roled plan"
compare "$TMP/dg.json" "$TMP/dg2.json" h100-0,h100-1 && ok || fail "re-roling moved a replica"
python3 - "$TMP/dgm.json" "$TMP/dg.json" "$TMP/dg2.json" <<'PY' && ok || fail "role flips"
import json, sys
m, old, new = (json.load(open(f)) for f in sys.argv[1:4])
assert m["roles_flipped"] >= 1 and m["started"] == 0, m
flips = [x for x in m["moves"] if x["kind"] == "role"]
assert len(flips) == m["roles_flipped"] and all(x["why"] == "decode -> prefill" for x in flips), flips
roles = {g["name"]: g["role"] for g in old["groups"]}
for g in new["groups"]:
    if any(x["group"] == g["name"] for x in flips):
        assert roles[g["name"]] == "decode" and g["role"] == "prefill", g["name"]
p = new["predicted"]
assert p["capacity_rps"] >= 115 / 0.9, p
PY
run simulate -p "$TMP/dg2.json" -w "$TMP/code115.json" --requests 3000
expect_rc 0 "simulate the re-roled plan"

# The disaggregated plan loses its H100 nodes and gains an A100 node at 130
# req/s (more than flips pass through the NICs): flips alone fall short, so new prefill or decode replicas start on
# the new node; the kept replicas stay, and the plan carries the rate.
python3 - $C "$TMP/swap.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["nodes"] = [n for n in c["nodes"] if n["name"] not in ("h100-0", "h100-1")]
n = dict(next(x for x in c["nodes"] if x["name"] == "a100-0"), name="a100-4")
c["nodes"].append(n)
json.dump(c, open(sys.argv[2], "w"))
PY
sed 's/"rate_rps": 10/"rate_rps": 130/' examples/workloads/code.json >"$TMP/code130.json"
run replan -p "$TMP/dg.json" -c "$TMP/swap.json" -w "$TMP/code130.json" -o "$TMP/dg3.json" --moves "$TMP/dgm3.json"
expect_rc 0 "replan a disaggregated plan with new replicas"
run check -p "$TMP/dg3.json" -c "$TMP/swap.json"
expect_rc 0 "check accepts it"
compare "$TMP/dg.json" "$TMP/dg3.json" h100-0,h100-1 && ok || fail "adding disaggregated replicas moved a kept one"
python3 - "$TMP/dgm3.json" "$TMP/dg3.json" <<'PY' && ok || fail "new disaggregated replicas"
import json, sys
m, p = (json.load(open(f)) for f in sys.argv[1:3])
starts = {x["group"] for x in m["moves"] if x["kind"] == "start"}
assert m["started"] >= 1 and starts, m
roles = {g["name"]: g["role"] for g in p["groups"]}
assert all(roles[g] in ("prefill", "decode") for g in starts), roles
for g in p["groups"]:
    if g["name"] in starts:
        assert all(ref.startswith("a100-4:") for r in g["replicas"] for st in r["placement"] for ref in st)
assert "status" not in p and p["predicted"]["capacity_rps"] >= 130 / 0.9, p["predicted"]
PY

# Short of capacity with no free GPU: the kept replicas as they are, marked
# short, exit 5; --strict refuses (exit 3), saying by how much, and writes
# nothing.
sed 's/"rate_rps": 20/"rate_rps": 600/' $W >"$TMP/w600.json"
drop_node() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["nodes"] = [n for n in c["nodes"] if n["name"] != sys.argv[3]]
json.dump(c, open(sys.argv[2], "w"))
PY
}
drop_node $C "$TMP/minus-h100.json" h100-0
run replan -p "$TMP/old.json" -c "$TMP/minus-h100.json" -w "$TMP/w600.json" -o "$TMP/short600.json"
expect_rc 5 "not enough GPUs left: a short plan"
grep -Eq '^hexplan: replan: short: the plan carries [0-9.]+ req/s at the SLO, [0-9.]+ short of the 666.667 req/s the rate of 600 req/s needs at 90% utilization; it serves [0-9.]+% of the offered traffic at the SLO$' "$TMP/err" && ok || fail "short line"
run check -p "$TMP/short600.json" -c "$TMP/minus-h100.json"
expect_rc 0 "check accepts the short plan"
run replan -p "$TMP/old.json" -c "$TMP/minus-h100.json" -w "$TMP/w600.json" -o "$TMP/none.json" --strict
expect_rc 3 "--strict: not enough GPUs left"
expect_err_line '^hexplan: error: the kept replicas carry [0-9.]+ req/s at the SLO and the free GPUs at most [0-9.]+ more, short of the [0-9.]+ req/s the rate of 600 req/s needs at 90% utilization$' "short message"
[ -e "$TMP/none.json" ] && fail "left a file" || ok

# bo-48 loses node a100-80g-0: the replica that used it stops, the other
# three stay, and the free A100 and A6000 GPUs take the best replica they
# can hold; still short of 20 req/s / 0.9, so the plan says so (exit 5),
# passes check, and its figures follow from its capacity.
B=examples/clusters/bo-48.json
hx plan --mode colocated -c $B -m llama-3.1-70b -w $W -o "$TMP/bo.json" || fail "bo-48 plan"
drop_node $B "$TMP/bo-minus.json" a100-80g-0
run replan -p "$TMP/bo.json" -c "$TMP/bo-minus.json" -w $W -o "$TMP/bo2.json" --moves "$TMP/bom.json"
expect_rc 5 "bo-48 without a100-80g-0: plan written, short"
grep -q '^hexplan: replan: short: ' "$TMP/err" && ok || fail "bo-48 says short"
run check -p "$TMP/bo2.json" -c "$TMP/bo-minus.json"
expect_rc 0 "check accepts the short bo-48 plan"
compare "$TMP/bo.json" "$TMP/bo2.json" a100-80g-0 && ok || fail "short replan moved a kept replica"
python3 - "$TMP/bo2.json" "$TMP/bom.json" <<'PY' && ok || fail "short plan figures"
import json, sys
p, m = (json.load(open(f)) for f in sys.argv[1:3])
s, cap = p["shortfall"], p["predicted"]["capacity_rps"]
assert p["status"] == "short" and s["rate_rps"] == 20 and s["utilization"] == 0.9, p
assert abs(s["shortfall_rps"] - (20 / 0.9 - cap)) < 1e-5 and s["shortfall_rps"] > 0, s
assert abs(s["served_share"] - min(1, cap / 20)) < 1e-5, s
assert m["kept"] == 3 and m["stopped"] == 1 and m["started"] >= 1, m
PY
# At 18 req/s the free GPUs' bound (each candidate alone) would cover the
# need, but no set of replicas they hold together does.
sed 's/"rate_rps": 20/"rate_rps": 18/' $W >"$TMP/w18.json"
run replan -p "$TMP/bo.json" -c "$TMP/bo-minus.json" -w "$TMP/w18.json" -o "$TMP/bo3.json" --strict
expect_rc 3 "bo-48 --strict refuses"
expect_err_line '^hexplan: error: the free GPUs cannot add the [0-9.]+ req/s at the SLO the rate needs$' "bo-48 --strict message"
[ -e "$TMP/bo3.json" ] && fail "--strict left a file" || ok
# A short plan whose figures do not follow from its capacity fails check.
python3 - "$TMP/bo2.json" "$TMP/bad-short.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["shortfall"]["served_share"] = 0.5
json.dump(p, open(sys.argv[2], "w"))
PY
run check -p "$TMP/bad-short.json" -c "$TMP/bo-minus.json"
expect_rc 1 "check rejects a wrong share"
expect_err_line '/shortfall/served_share: 0.5, but the plan carries [0-9.]+ of the rate of 20 req/s: 0\.[0-9]+$' "wrong share message"

# A pipeline plan loses the node of its first group (it holds layer 0,
# an A100 with 16 layers), at a tenth of the example's rate: the other
# fragments stay under their names or stop, the lost layers go to other
# nodes, and no placement or hop touches the lost node.
P=examples/clusters/helix-24.json
PW=examples/workloads/pipeline.json
sed 's/"rate_rps": 1,/"rate_rps": 0.09,/' $PW >"$TMP/pw-half.json"
hx plan -c $P -w $PW --mode pipeline -o "$TMP/pp.json" || fail "pipeline plan"
PGONE=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["groups"][0]["replicas"][0]["placement"][0][0].split(":")[0])' "$TMP/pp.json")
drop_node $P "$TMP/pp-minus.json" "$PGONE"
run replan -p "$TMP/pp.json" -c "$TMP/pp-minus.json" -w "$TMP/pw-half.json" -o "$TMP/pp2.json" --moves "$TMP/ppm.json"
expect_rc 0 "replan a pipeline plan"
run check -p "$TMP/pp2.json" -c "$TMP/pp-minus.json"
expect_rc 0 "check accepts the re-placed pipeline"
python3 - "$TMP/pp2.json" "$TMP/ppm.json" "$PGONE" "$TMP/pp.json" <<'PY' && ok || fail "pipeline hops around the lost node"
import json, sys
p, m, _, old = (json.load(open(f)) if i != 2 else None for i, f in enumerate(sys.argv[1:5]))
gone = sys.argv[3]
# Every fragment off the lost node stays as it was, or stops because the
# new placement's flow no longer passes it; nothing sits on the lost node.
def reps(x):
    return {r["id"]: (g["name"], r["placement"]) for g in x["groups"] for r in g["replicas"]}
o, n = reps(old), reps(p)
idle = {x["replica"] for x in m["moves"] if x["kind"] == "stop" and x["why"] == "its layers carry no flow past the nodes lost"}
for rid, (g, pl) in n.items():
    assert all(ref.split(":")[0] != gone for st in pl for ref in st), rid
for rid, (g, pl) in o.items():
    if all(ref.split(":")[0] != gone for st in pl for ref in st):
        assert n.get(rid) == (g, pl) or (rid in idle and rid not in n), ("moved", rid)
assert not any(h["link"].startswith(gone + "-") or h["link"].endswith("-" + gone) for h in p["routing"]["hops"]), p["routing"]["hops"]
starts = [x for x in m["moves"] if x["kind"] == "start"]
assert m["stopped"] >= 1 and starts and m["kept"] >= 1, m
layers = {g["name"]: g["stages"][0]["layers"] for g in p["groups"]}
assert any(layers[x["group"]][0] == 0 for x in starts), (starts, layers)
PY
run replan -p "$TMP/pp.json" -c "$TMP/pp-minus.json" -w "$TMP/pw-half.json"
cmp -s "$TMP/out" "$TMP/pp2.json" && ok || fail "pipeline replan is not deterministic"
# At the example's rate, the same loss: the lost layers are placed where
# the flow needs them, not on whichever free node holds them (an L4 with
# all 16 layers carried 0.108 req/s, a tenth of a fresh plan of the nodes
# left): the replan reaches at least 90% of that fresh plan's capacity,
# keeps most fragments, passes check and never touches the lost node.
hx plan -c "$TMP/pp-minus.json" -w $PW --mode pipeline -o "$TMP/pp-fresh.json" || fail "fresh pipeline plan"
run replan -p "$TMP/pp.json" -c "$TMP/pp-minus.json" -w $PW -o "$TMP/pp5.json" --moves "$TMP/ppm5.json"
[ "$rc" -eq 0 ] || [ "$rc" -eq 5 ] && ok || fail "pipeline replan at the example's rate: exit $rc"
run check -p "$TMP/pp5.json" -c "$TMP/pp-minus.json"
expect_rc 0 "check accepts the repaired pipeline"
python3 - "$TMP/pp5.json" "$TMP/ppm5.json" "$TMP/pp-fresh.json" "$PGONE" <<'PY' && ok || fail "pipeline replan capacity near a fresh plan"
import json, sys
p, m, fresh = (json.load(open(f)) for f in sys.argv[1:4])
gone = sys.argv[4]
cap, ref = p["predicted"]["capacity_rps"], fresh["predicted"]["capacity_rps"]
assert cap >= 0.9 * ref, (cap, ref)
assert m["capacity_rps"]["after"] == cap, m["capacity_rps"]
assert 2 * m["kept"] > m["replicas_before"], m
for g in p["groups"]:
    for r in g["replicas"]:
        assert all(ref.split(":")[0] != gone for st in r["placement"] for ref in st), g["name"]
assert not any(h["link"].startswith(gone + "-") or h["link"].endswith("-" + gone) for h in p["routing"]["hops"])
PY
# At 50 times the example's rate the nodes left fall short: a short plan
# (exit 5) that check accepts; --strict refuses.
sed 's/"rate_rps": 1,/"rate_rps": 50,/' $PW >"$TMP/pw50.json"
run replan -p "$TMP/pp.json" -c "$TMP/pp-minus.json" -w "$TMP/pw50.json" -o "$TMP/pp3.json"
expect_rc 5 "pipeline replan short of the rate"
run check -p "$TMP/pp3.json" -c "$TMP/pp-minus.json"
expect_rc 0 "check accepts the short pipeline"
run replan -p "$TMP/pp.json" -c "$TMP/pp-minus.json" -w "$TMP/pw50.json" -o "$TMP/pp4.json" --strict
expect_rc 3 "pipeline --strict refuses"
expect_err_line '^hexplan: error: the nodes left carry [0-9.]+ req/s at the SLO with the lost layers placed again, short of the [0-9.]+ req/s the rate of 50 req/s needs at 90% utilization$' "pipeline --strict message"
run replan -p "$TMP/pp.json" -c "$TMP/pp-minus.json"
expect_rc 1 "pipeline replan without -w"
expect_err_line '^hexplan: error: replan of a pipeline plan needs the workload \(-w\)' "pipeline without -w message"

# Cascade and route plans lose node h100-0: the replicas elsewhere stay,
# the cascade keeps its thresholds, the route plan each model's fraction,
# and both keep the quality they record.
CW=examples/workloads/cascade.json
hx plan -c $C -w $CW --mode cascade -o "$TMP/cas.json" || fail "cascade plan"
hx plan -c $C -w $CW --mode route -o "$TMP/rt.json" || fail "route plan"
drop_node $C "$TMP/minus-h100-0.json" h100-0
for k in cas rt; do
	run replan -p "$TMP/$k.json" -c "$TMP/minus-h100-0.json" -w $CW -o "$TMP/$k-2.json" --moves "$TMP/$k-m.json"
	expect_rc 0 "replan a $k plan"
	run check -p "$TMP/$k-2.json" -c "$TMP/minus-h100-0.json"
	expect_rc 0 "check accepts the replanned $k plan"
	compare "$TMP/$k.json" "$TMP/$k-2.json" h100-0 && ok || fail "$k replan moved a kept replica"
done
python3 - "$TMP/cas.json" "$TMP/cas-2.json" "$TMP/rt.json" "$TMP/rt-2.json" "$TMP/cas-m.json" <<'PY' && ok || fail "thresholds and fractions kept"
import json, sys
cas, cas2, rt, rt2, m = (json.load(open(f)) for f in sys.argv[1:6])
assert cas2["routing"]["cascade"] == cas["routing"]["cascade"]
assert cas2["predicted"]["quality"] == cas["predicted"]["quality"]
assert m["stopped"] >= 1 and m["started"] == 0 and m["kept"] >= 1, m
assert 0 < cas2["predicted"]["capacity_rps"] < cas["predicted"]["capacity_rps"]
def fractions(p):
    model = {g["name"]: g["model"] for g in p["groups"]}
    f = {}
    for r in p["routing"]["ingress"]:
        f[model[r["group"]]] = f.get(model[r["group"]], 0) + r["weight"]
    return f
a, b = fractions(rt), fractions(rt2)
assert a.keys() == b.keys() and all(abs(a[k] - b[k]) < 1e-5 for k in a), (a, b)
assert rt2["predicted"]["quality"] == rt["predicted"]["quality"]
PY
# At ten times the rate the cascade left is short: written, exit 5; --strict
# refuses.
sed 's/"rate_rps": 20/"rate_rps": 200/' $CW >"$TMP/cw200.json"
run replan -p "$TMP/cas.json" -c "$TMP/minus-h100-0.json" -w "$TMP/cw200.json" -o "$TMP/cas-3.json"
expect_rc 5 "short cascade"
run check -p "$TMP/cas-3.json" -c "$TMP/minus-h100-0.json"
expect_rc 0 "check accepts the short cascade"
run replan -p "$TMP/cas.json" -c "$TMP/minus-h100-0.json" -w "$TMP/cw200.json" --strict
expect_rc 3 "short cascade, --strict"
expect_err_line '^hexplan: error: the kept replicas carry [0-9.]+ req/s at the SLO \(model qwen3-[0-9]+b binds\), short of the 222.222 req/s the rate of 200 req/s needs at 90% utilization$' "short cascade message"

# No replica survives and the GPUs left hold none: exit 3, nothing written.
printf '{"version": 1, "nodes": [{"name": "t", "gpu": "t4", "count": 1}]}\n' >"$TMP/t4.json"
run replan -p "$TMP/old.json" -c "$TMP/t4.json" -w $W -o "$TMP/none2.json"
expect_rc 3 "nothing survives or fits"
expect_err_line '^hexplan: error: no replica survives and the free GPUs hold no replica of llama-3.1-8b$' "nothing fits message"
[ -e "$TMP/none2.json" ] && fail "left a file" || ok
# A route plan whose model loses every replica: exit 3.
python3 - $C "$TMP/no8b.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["nodes"] = [n for n in c["nodes"] if n["name"] != "a100-3" and not n["name"].startswith("l40s")]
json.dump(c, open(sys.argv[2], "w"))
PY
run replan -p "$TMP/rt.json" -c "$TMP/no8b.json" -w $CW
expect_rc 3 "a model of a route plan lost every replica"
expect_err_line '^hexplan: error: model qwen3-8b lost every replica; replan keeps a cascade.s thresholds and a route plan.s fractions and starts no replicas for them$' "lost model message"

# Spill-over (issue 18): a composed plan of l40s GPUs at 22 req/s loses
# offer2-1 (the l40s offer cut to 4 GPUs, all of them in use): with no
# l40s to spare, replan rents another type, says so, lists the
# substitutions against the plan it adapts, and check accepts it.
sed 's/"rate_rps": 20/"rate_rps": 22/' examples/workloads/chat.json >"$TMP/w22.json"
python3 - examples/clusters/cloud-offers.json "$TMP/l40s-4.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["offers"][2]["max_count"] = 4
json.dump(c, open(sys.argv[2], "w"))
PY
run plan -c examples/clusters/cloud-offers.json -w "$TMP/w22.json" -m llama-3.1-8b --mode compose -o "$TMP/sp.json"
expect_rc 0 "compose plan of l40s"
run replan -p "$TMP/sp.json" -c "$TMP/l40s-4.json" -w "$TMP/w22.json" -o "$TMP/sp2.json"
expect_rc 0 "replan spills over to another type"
[ "$(wc -l <"$TMP/err")" -eq 2 ] && ok || fail "replan: two lines on stderr"
tail -1 "$TMP/err" >"$TMP/err1" && mv "$TMP/err1" "$TMP/err"
expect_err_line '^hexplan: replan: spill-over: short: l40s \(4 GPUs of the [0-9]+ preferred\); used instead: [a-z0-9-]+ \([0-9]+ GPUs, 0 preferred\); \+[0-9.]+ USD/h against the preferred plan.s [0-9.]+ USD/h$' "replan spill-over note"
run check -p "$TMP/sp2.json" -c "$TMP/l40s-4.json"
expect_rc 0 "check accepts the replan with substitutions"
python3 - "$TMP/sp.json" "$TMP/sp2.json" <<'PY' && ok || fail "replan substitutions"
import json, sys
old, p = (json.load(open(f)) for f in sys.argv[1:3])
assert {r["gpu"] for r in old["rent"]} == {"l40s"}, old["rent"]
s = p["substitutions"]
assert abs(s["preferred_usd_per_hour"] - old["predicted"]["usd_per_hour"]) < 1e-6, s
rows = {r["gpu"]: r for r in s["gpus"]}
assert rows["l40s"]["gpus"] == 4 < rows["l40s"]["preferred_gpus"], rows
assert any(g != "l40s" and r["gpus"] > 0 for g, r in rows.items()), rows
assert "status" not in p, p.get("status")
PY

# KV links (issue 18): a disaggregated plan on three A100 nodes (decode
# on p0, prefill on d0 and d1) loses d0 at 80 req/s; node x (H100s, more
# capacity per replica) is behind 1 Gb/s links, node y (A100s) is not.
# The new prefill replicas go to y, their KV over y's link; with only x
# left free, the plan is short and its capacity is what the slow link
# lets through (not the H100s' prefill capacity).
run plan -c tests/data/replan/kv-three.json -w examples/workloads/chat.json -m llama-3.1-8b --mode disagg -o "$TMP/kv.json"
expect_rc 0 "disagg plan on three nodes"
sed 's/"rate_rps": 20/"rate_rps": 80/' examples/workloads/chat.json >"$TMP/w80.json"
run replan -p "$TMP/kv.json" -c tests/data/replan/kv-slow-x.json -w "$TMP/w80.json" -o "$TMP/kv2.json"
expect_rc 0 "replan adds prefill replicas away from the slow link"
run check -p "$TMP/kv2.json" -c tests/data/replan/kv-slow-x.json
expect_rc 0 "check accepts it"
python3 - "$TMP/kv2.json" <<'PY' && ok || fail "new replicas and kv routes avoid the slow link"
import json, sys
p = json.load(open(sys.argv[1]))
new = [g for g in p["groups"] if g["name"].startswith("g")]
assert new and all(g["role"] == "prefill" for g in new), new
ids = {r["id"] for g in new for r in g["replicas"]}
assert all(ref.startswith("y:") for g in new for r in g["replicas"] for st in r["placement"] for ref in st), new
kv = [k for k in p["routing"]["kv"] if k["from"] in ids]
assert kv and all(k["link"] == "y-p0" and k["bw_gbps"] == 100 for k in kv), kv
assert p["predicted"]["capacity_rps"] >= 80 / 0.9, p["predicted"]
PY
run replan -p "$TMP/kv.json" -c tests/data/replan/kv-slow-x-only.json -w "$TMP/w80.json" -o "$TMP/kv3.json"
expect_rc 5 "only the slow node left: short"
run check -p "$TMP/kv3.json" -c tests/data/replan/kv-slow-x-only.json
expect_rc 0 "check accepts the short plan"
python3 - "$TMP/kv3.json" <<'PY' && ok || fail "capacity within what the slow link carries"
import json, sys
p = json.load(open(sys.argv[1]))
pre = {g["name"]: g for g in p["groups"] if g["role"] == "prefill"}
kept = pre["p2"]["predicted"]["capacity_rps"] * len(pre["p2"]["replicas"])
cap = p["predicted"]["capacity_rps"]
# 1 Gb/s of KV is under 1 req/s of chat prompts for Llama 3.1 8B
assert kept < cap < kept + 1, (kept, cap)
ids = {r["id"] for g in p["groups"] if g["name"].startswith("g") for r in g["replicas"]}
assert all(k["bw_gbps"] == 1 for k in p["routing"]["kv"] if k["from"] in ids)
PY

# Bad inputs.
run replan -p "$TMP/old.json"
expect_rc 2 "replan without -c"
[ "$(head -1 "$TMP/err")" = "hexplan: error: -p plan.json and -c cluster.json are required" ] && ok || fail "missing -c message"
printf '{"version": 1}' >"$TMP/bad.json"
run replan -p "$TMP/bad.json" -c $C
expect_rc 1 "not a plan"
grep -q "bad.json" "$TMP/err" && ok || fail "bad plan message names the file"

finish
