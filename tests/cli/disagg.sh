#!/bin/sh
# plan --mode disagg: prefill and decode groups with KV routes, valid for
# check, simulated end to end, deterministic, clear errors.
. "$(dirname "$0")/../lib.sh"

C=examples/clusters/mixed.json
W=examples/workloads/code.json

run plan -c $C -w $W -m llama-3.1-8b --mode disagg -o "$TMP/d.json"
expect_rc 0 "disagg plan"
run check -p "$TMP/d.json" -c $C
expect_rc 0 "check accepts the disagg plan"
run plan -c $C -w $W -m llama-3.1-8b --mode disagg
cmp -s "$TMP/out" "$TMP/d.json" && ok || fail "disagg plan is not deterministic"
python3 - "$TMP/d.json" <<'PY' && ok || fail "disagg plan shape"
import json, sys
p = json.load(open(sys.argv[1]))
roles = {g["role"] for g in p["groups"]}
assert roles == {"prefill", "decode"}, roles
assert p["solver"]["engine"] == "igraph" and p["solver"]["status"] == "heuristic"
assert p["solver"]["bound"] >= p["solver"]["objective"] > 0
kv = p["routing"]["kv"]
assert kv and all(r["bw_gbps"] > 0 and r["link"] for r in kv)
ing = [r["group"] for r in p["routing"]["ingress"]]
assert all(g["role"] == "prefill" for g in p["groups"] if g["name"] in ing)
PY

# Simulated: every request prefilled on one side, decoded on the other
# (a one-token answer comes straight from its prefill replica).
run simulate -p "$TMP/d.json" -w $W --requests 3000 --per-request "$TMP/r.csv"
expect_rc 0 "simulate the disagg plan"
[ "$(jnum requests.finished)" = "3000" ] && ok || fail "all requests finish"
python3 - "$TMP/r.csv" "$TMP/d.json" <<'PY' && ok || fail "requests end on decode groups"
import csv, json, sys
p = json.load(open(sys.argv[2]))
dec = {g["name"] for g in p["groups"] if g["role"] == "decode"}
for r in csv.DictReader(open(sys.argv[1])):
    assert r["group"] in dec or r["output_tokens"] == "1", r
    assert float(r["ttft_ms"]) >= 0 and float(r["e2e_ms"]) >= float(r["ttft_ms"]), r
PY

# Above 256 nodes the partition runs on classes of nodes (GPU, count,
# region): the plan still gives every node one role and passes check.
python3 - "$TMP/c300.json" <<'PY'
import json, sys
gpus = ["h100-sxm", "a100-80g", "l40s", "l4"]
nodes = [{"name": "n%d" % i, "gpu": gpus[i % 4], "count": 8, "region": "r%d" % (i % 3)}
         for i in range(300)]
links = [{"a": "n%d" % i, "b": "n%d" % (i + 1), "bw_gbps": 25, "latency_ms": 0.1}
         for i in range(0, 300, 7)]
json.dump({"version": 1, "nodes": nodes, "links": links}, open(sys.argv[1], "w"))
PY
run plan -c "$TMP/c300.json" -w $W -m llama-3.1-8b --mode disagg --time-limit 3 -o "$TMP/d300.json"
expect_rc 0 "disagg plan of 300 nodes"
run check -p "$TMP/d300.json" -c "$TMP/c300.json"
expect_rc 0 "check accepts the 300-node disagg plan"
python3 - "$TMP/d300.json" <<'PY' && ok || fail "300-node plan: one role per node"
import json, sys
p = json.load(open(sys.argv[1]))
role = {}
for g in p["groups"]:
    for r in g["replicas"]:
        for st in r["placement"]:
            for ref in st:
                n = ref.split(":")[0]
                assert role.setdefault(n, g["role"]) == g["role"], n
assert set(role.values()) == {"prefill", "decode"}, set(role.values())
PY

run plan -c examples/clusters/h100-node.json -w $W --mode disagg
expect_rc 3 "one node"
expect_err_line '^hexplan: error: disaggregation needs at least two nodes \(this cluster has 1\)$' "one node message"

finish
