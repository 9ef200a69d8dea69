#!/bin/sh
# plan_property: every plan a planner writes passes 'hexplan check' (issue
# 20: 30 of 553 generated plans were refused right after plan wrote them).
# Clusters, models and workloads are drawn by a seeded generator; every
# mode that plans one model runs on each; the written routing weights are
# exact (at most 6 decimals, none negative or -0, each list summing to
# exactly 1 in millionths) and solver.gap is not negative.
. "${top_srcdir:-.}/tests/lib.sh"

python3 - "$TMP" <<'PY'
import json, random, sys
tmp = sys.argv[1]
rng = random.Random(20)
gpus = ["l4", "a10g", "l40s", "a100-40g", "a100-80g", "h100-sxm", "rtx4090", "t4"]
models = ["llama-3.1-8b", "qwen2.5-7b", "qwen2.5-14b", "llama-2-13b"]
for k in range(8):
    nodes = []
    for i in range(rng.randint(2, 5)):
        nodes.append({"name": "n%d" % i, "gpu": rng.choice(gpus),
                      "count": rng.choice([1, 2, 4, 8]),
                      "region": rng.choice(["east", "east", "west"]),
                      "nic_gbps": rng.choice([10, 25, 100, 400])})
    links = []
    if len(nodes) > 2 and rng.random() < 0.5:
        links.append({"a": "n0", "b": "n1", "bw_gbps": rng.choice([1, 10, 200]),
                      "latency_ms": rng.choice([0.01, 1, 40])})
    json.dump({"version": 1, "nodes": nodes, "links": links}, open("%s/c%d.json" % (tmp, k), "w"))
    p50 = rng.choice([128, 512, 2000])
    o50 = rng.choice([32, 128, 400])
    w = {"version": 1, "model": rng.choice(models), "rate_rps": rng.choice([0.5, 3, 20, 200]),
         "prompt_tokens": {"dist": "lognormal", "mean": int(p50 * 1.2), "p50": p50, "max": p50 * 8},
         "output_tokens": {"dist": "lognormal", "mean": int(o50 * 1.3), "p50": o50, "max": o50 * 8},
         "slo": {"ttft_ms": rng.choice([300, 2000, 10000]), "tpot_ms": rng.choice([30, 100, 300])}}
    if rng.random() < 0.5:
        w["arrival"] = {"process": "gamma", "cv": rng.choice([0.5, 2, 8])}
    json.dump(w, open("%s/w%d.json" % (tmp, k), "w"))
PY

# exact PLAN: the weights and gap of PLAN as the issue asks.
exact() {
	python3 - "$1" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
bad = []
if p["solver"]["gap"] < 0:
    bad.append("solver.gap %r" % p["solver"]["gap"])
sums = {}
r = p.get("routing", {})
for kind, key in (("ingress", "class"), ("kv", "from"), ("hops", "from")):
    for e in r.get(kind, []):
        w = e["weight"]
        m = round(w * 1e6)
        if w < 0 or str(w).startswith("-") or abs(w * 1e6 - m) > 1e-6:
            bad.append("%s weight %r" % (kind, w))
        sums[(kind, e.get(key, ""))] = sums.get((kind, e.get(key, "")), 0) + m
for k, s in sums.items():
    if s != 1000000:
        bad.append("%s %r sums to %d millionths" % (k[0], k[1], s))
if bad:
    print("; ".join(bad[:3]))
    sys.exit(1)
PY
}

for k in 0 1 2 3 4 5 6 7; do
	for mode in baseline colocated disagg pipeline; do
		run plan -c "$TMP/c$k.json" -w "$TMP/w$k.json" --mode $mode -o "$TMP/p.json"
		case $rc in
		0) ok ;;
		3 | 4) continue ;; # no plan: nothing to check
		*) fail "plan $k $mode: exit $rc" && continue ;;
		esac
		run check -p "$TMP/p.json" -c "$TMP/c$k.json"
		expect_rc 0 "check of plan $k $mode"
		if why=$(exact "$TMP/p.json"); then ok; else fail "plan $k $mode: $why"; fi
	done
done
finish
