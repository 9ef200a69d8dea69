#!/bin/sh
# plan --mode cascade and --mode route: plans from the workload's quality
# profile that check accepts and the simulator runs, deterministic, with the
# profile's thresholds, fractions and quality recorded; and their errors.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

C=examples/clusters/mixed.json
W=examples/workloads/cascade.json

run plan -c $C -w $W --mode cascade -o "$TMP/c.json" --lp "$TMP/c.lp"
expect_rc 0 "cascade plan"
run check -p "$TMP/c.json" -c $C
expect_rc 0 "check accepts the cascade plan"
grep -q '^Maximize' "$TMP/c.lp" && grep -q 'kappa' "$TMP/c.lp" && ok || fail "cascade LP file"
# The plan's record agrees with the profile: recompute Q(theta) and the
# escalation fractions from the workload file.
python3 - "$TMP/c.json" $W <<'PY' && ok || fail "cascade record vs profile"
import json, sys
p, w = (json.load(open(f)) for f in sys.argv[1:3])
q = w["quality"]
steps = p["routing"]["cascade"]
assert p["mode"] == "cascade" and len(steps) >= 2, steps
models = [s["model"] for s in steps]
idx = [q["models"].index(m) for m in models]  # a subsequence, in order
assert idx == sorted(idx), idx
theta = [s["threshold"] for s in steps[:-1]]
reach = [0] * len(steps)
total = 0
for s in q["samples"]:
    for k, i in enumerate(idx):
        reach[k] += 1
        if k == len(idx) - 1 or s["scores"][i] >= theta[k]:
            total += s["scores"][i]
            break
n = len(q["samples"])
assert abs(p["predicted"]["quality"] - total / n) < 1e-4, (p["predicted"]["quality"], total / n)
assert p["predicted"]["quality"] >= q["floor"]
for k in range(len(steps) - 1):
    assert abs(steps[k]["escalate"] - reach[k + 1] / reach[k]) < 1e-6, (k, steps[k], reach)
assert steps[-1]["escalate"] == 0
# requests enter at the first model; every step's model has groups
first = {g["name"] for g in p["groups"] if g["model"] == steps[0]["model"]}
assert {r["group"] for r in p["routing"]["ingress"]} <= first
for s in steps:
    assert any(g["model"] == s["model"] for g in p["groups"]), s
assert {m["name"] for m in p["models"]} == {s["model"] for s in steps}
PY

# Deterministic: the same inputs give the same bytes.
run plan -c $C -w $W --mode cascade
cmp -s "$TMP/out" "$TMP/c.json" && ok || fail "cascade plan is not deterministic"

# The simulator runs the cascade and escalates about the profile's fraction.
run simulate -p "$TMP/c.json" -w $W --requests 3000 --per-request "$TMP/req.csv"
expect_rc 0 "simulate the cascade"
python3 - "$TMP/c.json" "$TMP/req.csv" <<'PY' && ok || fail "simulated escalations"
import csv, json, math, sys
p = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
esc = sum(int(r["escalations"]) >= 1 for r in rows) / len(rows)
want = p["routing"]["cascade"][0]["escalate"]
sd = math.sqrt(want * (1 - want) / len(rows))
assert abs(esc - want) <= 4 * sd, (esc, want, sd)
PY
run simulate -p "$TMP/c.json" -w $W --capacity --requests 2000
expect_rc 0 "simulate --capacity on the cascade"
cap=$(jnum capacity_rps)
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$cap" && ok || fail "cascade capacity $cap"

# A table for people names the cascade and its quality.
run plan -p "$TMP/c.json" --format table
expect_out '^cascade: qwen3-8b \(score < [0-9.]+: [0-9.]+% on\) -> ' "table cascade line"
expect_out '^quality: [0-9.]+ \(judge score, 0-100\)$' "table quality line"

# route: one stage, fractions to each model meeting the floor.
run plan -c $C -w $W --mode route -o "$TMP/r.json"
expect_rc 0 "route plan"
run check -p "$TMP/r.json" -c $C
expect_rc 0 "check accepts the route plan"
python3 - "$TMP/r.json" $W <<'PY' && ok || fail "route fractions vs floor"
import json, sys
p, w = (json.load(open(f)) for f in sys.argv[1:3])
q = w["quality"]
mean = [sum(s["scores"][i] for s in q["samples"]) / len(q["samples"]) for i in range(len(q["models"]))]
model = {g["name"]: g["model"] for g in p["groups"]}
frac = {}
for r in p["routing"]["ingress"]:
    frac[model[r["group"]]] = frac.get(model[r["group"]], 0) + r["weight"]
quality = sum(f * mean[q["models"].index(m)] for m, f in frac.items())
assert quality >= q["floor"] - 1e-3, (quality, frac)
assert abs(quality - p["predicted"]["quality"]) < 1e-3, (quality, p["predicted"])
assert p["solver"]["status"] == "optimal" and not p["routing"]["cascade"]
PY
run simulate -p "$TMP/r.json" -w $W --requests 500
expect_rc 0 "simulate the route plan"
run plan -c $C -w $W --mode route --objective cost -o "$TMP/rc.json"
expect_rc 0 "route --objective cost"
python3 - "$TMP/rc.json" "$TMP/r.json" <<'PY' && ok || fail "route cost plan"
import json, sys
c, r = (json.load(open(f)) for f in sys.argv[1:3])
assert c["predicted"]["usd_per_hour"] < r["predicted"]["usd_per_hour"], (c["predicted"], r["predicted"])
assert c["predicted"]["quality"] >= 80 - 1e-3
PY

# validate summarizes the profile: each model's mean score over the sample.
run validate -w $W
expect_rc 0 "validate the cascade workload"
python3 - "$TMP/out" $W <<'PY' && ok || fail "validate quality summary"
import json, sys
v, w = (json.load(open(f)) for f in sys.argv[1:3])
q, s = w["quality"], v["workload"]["quality"]
assert s["samples"] == len(q["samples"]) and s["floor"] == q["floor"]
for i, m in enumerate(s["models"]):
    assert m["model"] == q["models"][i]
    mean = sum(x["scores"][i] for x in q["samples"]) / len(q["samples"])
    assert abs(m["mean_score"] - mean) < 1e-4, (m, mean)
PY

# ---- errors ----------------------------------------------------------------------------
sed 's/"floor": 80/"floor": 99/' $W >"$TMP/w99.json"
run plan -c $C -w "$TMP/w99.json" --mode cascade -o "$TMP/none.json"
expect_rc 3 "cascade floor out of reach"
expect_err_line '^hexplan: error: the quality floor of 99 is above what any thresholds reach \(at most [0-9.]+\)$' "cascade floor out of reach"
[ ! -e "$TMP/none.json" ] && ok || fail "no output file after exit 3"
run plan -c $C -w "$TMP/w99.json" --mode route
expect_rc 3 "route floor out of reach"
expect_err_line '^hexplan: error: the quality floor of 99 is above what any split reaches \(at most 92\.6[0-9], everything to qwen3-235b-a22b\)$' "route floor out of reach"

# Only cascades of two models or more pass 92.646 (the 235B alone gets 92.645).
sed 's/"ttft_ms": 30000/"ttft_ms": 5000/; s/"floor": 80/"floor": 92.646/' $W >"$TMP/wslo.json"
run plan -c $C -w "$TMP/wslo.json" --mode cascade
expect_rc 3 "TTFT SLO too short for a cascade"
expect_err_line '^hexplan: error: the TTFT SLO of 5000 ms cannot cover a request escalated through the models the quality floor of 92\.646 needs: each earlier answer may take [0-9]+ ms \([0-9]+ tokens, the p95 output, at the TPOT SLO of 30 ms\)$' "TTFT SLO too short"

# A TPOT SLO no GPU set meets (issue 20): the TPOT SLO binds, not the floor.
sed 's/"tpot_ms": 30/"tpot_ms": 2/' $W >"$TMP/wtpot.json"
for mode in cascade route; do
	run plan -c $C -w "$TMP/wtpot.json" --mode $mode
	expect_rc 3 "$mode: TPOT SLO unreachable"
	expect_err_line '^hexplan: error: the TPOT SLO of 2 ms binds: no GPU set serves qwen3-8b within it, and the quality floor of 80 needs it$' "$mode: TPOT SLO unreachable message"
done

run plan -c $C -w $W --mode cascade -m qwen3-8b
expect_rc 2 "cascade with -m"
head -1 "$TMP/err" | grep -q "^hexplan: error: --mode cascade takes its models from the workload's quality profile, not -m\$" && ok || fail "cascade with -m: message"
run plan -c $C -w examples/workloads/chat.json --mode route
expect_rc 2 "route without a profile"
head -1 "$TMP/err" | grep -q '^hexplan: error: --mode route needs a workload with a quality profile ("quality")$' && ok || fail "route without a profile: message"
run plan -c $C -w $W --mode cascade --objective latency
expect_rc 2 "cascade --objective latency"
expect_err_line '^hexplan: error: cascade plans maximize capacity or minimize cost, not latency$' "cascade --objective latency"

finish
