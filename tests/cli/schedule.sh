#!/bin/sh
# schedule: a day of two peaks planned period by period; every period's
# plan carries its rate (predicted and simulated), the day costs less than
# the peak's plan all day, check verifies every plan, the moves and
# start-ups add up, and the same inputs give the same bytes.
. "$(dirname "$0")/../lib.sh"

C=examples/clusters/mixed.json
W=examples/workloads/two-peaks.json

# props SCHEDULE: the schedule's invariants.
props() {
	python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "hexplan.schedule" and d["version"] == 1, d["schema"]
ps, t = d["periods"], d["totals"]
prev = 0
start = 0
for k, p in enumerate(ps):
    assert abs(p["start_s"] - start) < 1e-6, (k, p["start_s"])
    start += p["duration_s"]
    m = p["moves"]
    if p["rate_rps"] > 0:
        assert p["plan"]["schema"] == "hexplan.plan", k
        # every period carries its rate, by the cost model and the simulator
        assert p["capacity_rps"] >= p["rate_rps"], (k, p["capacity_rps"], p["rate_rps"])
        assert p["simulated_capacity_rps"] >= p["rate_rps"], (k, p["simulated_capacity_rps"])
        reps = sum(len(g["replicas"]) for g in p["plan"]["groups"])
        assert reps == p["replicas"], (k, reps)
        assert abs(p["usd_per_hour"] - p["plan"]["predicted"]["usd_per_hour"]) < 1e-9
        assert p["usd_per_hour"] <= 1.1 * p["least_usd_per_hour"] + 1e-9, k
    else:
        assert p["plan"] is None and p["replicas"] == 0, k
    # the replicas before are kept or stopped; the plan's are kept or started
    assert m["kept"] + m["stopped"] == prev, (k, m, prev)
    assert m["kept"] + m["started"] == p["replicas"], (k, m)
    assert (m["started"] > 0) == (m["bytes_to_load"] > 0) == (m["startup_s"] > 0), (k, m)
    prev = p["replicas"]
usd = sum(p["usd"] for p in ps)
assert abs(usd - t["usd"]) <= 1e-5 * usd, (usd, t["usd"])
assert t["replicas"] == [p["replicas"] for p in ps]
peak = max(range(len(ps)), key=lambda k: (ps[k]["rate_rps"], -k))
assert t["static_peak"]["period"] == peak
assert abs(t["static_peak"]["usd"] - ps[peak]["least_usd_per_hour"] * t["duration_s"] / 3600) < 1e-4
assert abs(t["cost_ratio"] - t["usd"] / t["static_peak"]["usd"]) < 1e-5
assert t["started"] == sum(p["moves"]["started"] for p in ps[1:])
assert t["stopped"] == sum(p["moves"]["stopped"] for p in ps)
PY
}

# --- the two-peak day on owned GPUs ---------------------------------------
run schedule -c $C -w $W -o "$TMP/day.json"
expect_rc 0 "schedule a two-peak day"
expect_err_line '^hexplan: schedule: 6 periods planned in [0-9.]+ s$' "schedule's summary line"
props "$TMP/day.json" && ok || fail "schedule invariants"
python3 - "$TMP/day.json" <<'PY' && ok || fail "the day costs less than the peak's plan all day and follows the load"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["totals"]
assert [p["rate_rps"] for p in d["periods"]] == [2, 8, 3, 9, 2, 1]
assert t["cost_ratio"] < 0.8, t
r = t["replicas"]
# more replicas at the peaks than in the troughs
assert r[1] > r[0] and r[1] > r[2] and r[3] > r[2] and r[3] > r[4], r
# replicas are kept across periods, not replaced
assert all(p["moves"]["kept"] >= 1 for p in d["periods"][1:]), [p["moves"] for p in d["periods"]]
assert any(p["origin"] == "follow" for p in d["periods"]), [p["origin"] for p in d["periods"]]
PY
run check -p "$TMP/day.json" -c $C
expect_rc 0 "check verifies every period's plan"
expect_out '"plans": 6' "check counts the plans"
run check -p "$TMP/day.json" -c $C --format table
expect_out '^ok: 6 periods, 6 plans, at most [0-9]+ of 64 GPUs$' "check's table on a schedule"

# A period's plan that is wrong is named by its period.
python3 - "$TMP/day.json" "$TMP/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
g = d["periods"][2]["plan"]["groups"][0]
g["stages"][0]["tp"] = 3
json.dump(d, open(sys.argv[2], "w"))
PY
run check -p "$TMP/bad.json" -c $C
expect_rc 1 "check finds a bad period plan"
if grep -Eq "^hexplan: error: $TMP/bad.json: /periods/2/plan: /groups/0/" "$TMP/err"; then ok; else fail "check names the period"; fi

# Deterministic: the same bytes to a file and to standard output.
run schedule -c $C -w $W
expect_rc 0 "schedule to standard output"
cmp -s "$TMP/out" "$TMP/day.json" && ok || fail "schedule is not deterministic"

# --plot: the day's picture, written with the schedule; its step lines
# hold each period's rate, capacity and price over the period.
run schedule -c $C -w $W -o "$TMP/day2.json" --plot "$TMP/day.svg"
expect_rc 0 "schedule --plot"
cmp -s "$TMP/day2.json" "$TMP/day.json" && ok || fail "--plot changes the schedule"
python3 - "$TMP/day.json" "$TMP/day.svg" <<'PY' && ok || fail "the plot draws the schedule"
import json, re, sys
import xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
root = ET.parse(sys.argv[2]).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert root.tag == ns + "svg", root.tag
paths = {p.get("class"): p.get("d") for p in root.iter(ns + "path")}
assert set(paths) == {"load", "capacity", "cost"}, paths.keys()
ps = d["periods"]
def levels(dd):
    # "Mx y Hx L x y Hx ...": one (y, x0, x1) per period
    segs = re.findall(r"[ML]\s*([0-9.]+) ([0-9.]+) H([0-9.]+)", dd)
    return [(float(y), float(a), float(b)) for a, y, b in segs]
for name in paths:
    lv = levels(paths[name])
    assert len(lv) == len(ps), (name, len(lv))
    for k in range(1, len(lv)):
        assert abs(lv[k][1] - lv[k - 1][2]) < 0.05, (name, k)  # periods abut
# the higher the value, the higher on the page (smaller y)
for name, key in (("load", "rate_rps"), ("cost", "usd_per_hour")):
    lv = levels(paths[name])
    for i in range(len(ps)):
        for j in range(len(ps)):
            if ps[i][key] > ps[j][key] + 1e-9:
                assert lv[i][0] < lv[j][0], (name, i, j)
cap = levels(paths["capacity"])
rate = levels(paths["load"])
for k, p in enumerate(ps):
    if p["rate_rps"] > 0:
        assert cap[k][0] <= rate[k][0] + 0.05, (k, cap[k], rate[k])  # capacity over load
title = root.find(ns + "text").text
assert ("%.3f of the peak plan" % d["totals"]["cost_ratio"]) in title, title
PY
run schedule -c $C -w $W -o "$TMP/same.out" --plot "$TMP/same.out"
expect_rc 2 "-o and --plot naming one file"
[ ! -e "$TMP/same.out" ] && ok || fail "-o and --plot naming one file wrote it"
run schedule -c $C -w examples/workloads/chat.json --plot "$TMP/none.svg"
expect_rc 1 "schedule --plot of a workload without stages"
[ ! -e "$TMP/none.svg" ] && ok || fail "a failed schedule left a plot"

# The table.
run schedule -c $C -w $W --format table
expect_rc 0 "schedule --format table"
expect_out '^schedule colocated: 6 periods, model llama-3.1-8b$' "table header"
expect_out '^cost: \$[0-9.]+ over 86400 s; the peak period.s plan all day \$[0-9.]+ \(ratio 0\.[0-9]+\)' "table cost line"

# --- start-up times: weights over the nodes' load bandwidth ---------------
python3 - $C "$TMP/slow.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
for n in c["nodes"]:
    n["load_gbps"] = 1
json.dump(c, open(sys.argv[2], "w"))
PY
run schedule -c "$TMP/slow.json" -w $W -o "$TMP/slow-day.json"
expect_rc 0 "schedule on slowly loading nodes"
python3 - "$TMP/day.json" "$TMP/slow-day.json" <<'PY' && ok || fail "start-up times follow load_gbps"
import json, sys
fast, slow = (json.load(open(f)) for f in sys.argv[1:3])
for p in fast["periods"] + slow["periods"]:
    m = p["moves"]
    if m["started"] == 1:
        gbps = 16 if p in fast["periods"] else 1
        assert abs(m["startup_s"] - m["bytes_to_load"] * 8 / (gbps * 1e9)) < 1e-3 * m["startup_s"], m
s = slow["periods"][0]
assert s["moves"]["startup_s"] > 100 and slow["totals"]["startup_before_usd"] > fast["totals"]["startup_before_usd"]
# the next period's start-ups are paid in the period before
p0 = slow["periods"][0]
assert abs(p0["usd"] - (p0["usd_per_hour"] * p0["duration_s"] / 3600 + p0["startup_usd"])) < 1e-4
assert slow["periods"][0]["startup_usd"] > 0
PY

# --- an idle period runs nothing -------------------------------------------
python3 - $W "$TMP/idle.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
w["stages"] = [{"rate_rps": 2, "duration_s": 3600}, {"rate_rps": 0, "duration_s": 3600},
               {"rate_rps": 3, "duration_s": 3600}]
json.dump(w, open(sys.argv[2], "w"))
PY
run schedule -c $C -w "$TMP/idle.json" -o "$TMP/idle-s.json"
expect_rc 0 "schedule with an idle period"
props "$TMP/idle-s.json" && ok || fail "idle schedule invariants"
run check -p "$TMP/idle-s.json" -c $C
expect_rc 0 "check skips the idle period's null plan"

# --- rented GPUs: compose ---------------------------------------------------
O=examples/clusters/cloud-offers.json
run schedule -c $O -w $W --mode compose -o "$TMP/rent.json"
expect_rc 0 "schedule with compose"
props "$TMP/rent.json" && ok || fail "compose schedule invariants"
run check -p "$TMP/rent.json" -c $O
expect_rc 0 "check verifies the composed plans, rent included"

# --- a trace binned into periods --------------------------------------------
hx trace --rate 4 --shape conversation --duration 300 --seed 3 -o "$TMP/t.csv" 2>/dev/null || fail "trace"
run schedule -c $C -w $W --trace "$TMP/t.csv" --period 100 -o "$TMP/tr.json"
expect_rc 0 "schedule a trace"
python3 - "$TMP/tr.json" "$TMP/t.csv" <<'PY' && ok || fail "trace periods"
import csv, json, math, sys
d = json.load(open(sys.argv[1]))
rows = list(csv.reader(open(sys.argv[2])))[1:]
t = [float(r[0]) for r in rows]
n = math.floor(max(t) / 100) + 1
assert d["load"] == "trace" and d["period_s"] == 100 and len(d["periods"]) == n, len(d["periods"])
for k, p in enumerate(d["periods"]):
    want = sum(1 for x in t if math.floor(x / 100) == k) / 100
    assert abs(p["rate_rps"] - want) < 1e-5 * want, (k, p["rate_rps"], want)
    assert p["duration_s"] == 100 and p["start_s"] == 100 * k
PY
props "$TMP/tr.json" && ok || fail "trace schedule invariants"

# --- errors -----------------------------------------------------------------
run schedule -c $C -w examples/workloads/chat.json
expect_rc 1 "a workload without stages"
expect_err_line '^hexplan: error: examples/workloads/chat.json: /stages: missing: schedule needs the load over time, as the workload.s "stages" or a trace \(--trace FILE --period S\)$' "no stages"
python3 - $W "$TMP/empty.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
w["stages"] = []
json.dump(w, open(sys.argv[2], "w"))
PY
run schedule -c $C -w "$TMP/empty.json"
expect_rc 1 "empty stages"
expect_err_line "^hexplan: error: $TMP/empty.json: /stages: must be a non-empty array of stages$" "empty stages message"
python3 - $C "$TMP/neg.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["nodes"][2]["load_gbps"] = -2
json.dump(c, open(sys.argv[2], "w"))
PY
run schedule -c "$TMP/neg.json" -w $W
expect_rc 1 "a negative load_gbps"
expect_err_line "^hexplan: error: $TMP/neg.json: /nodes/2/load_gbps: must be a positive number, not -2$" "negative load_gbps"
python3 - $O "$TMP/neg-offer.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["offers"][1]["load_gbps"] = "fast"
json.dump(c, open(sys.argv[2], "w"))
PY
run validate -c "$TMP/neg-offer.json"
expect_rc 1 "an offer's load_gbps that is not a number"
expect_err_line "^hexplan: error: $TMP/neg-offer.json: /offers/1/load_gbps: " "offer load_gbps named"
run schedule -c $C -w $W --period 60
expect_rc 2 "--period without --trace"
if head -n 1 "$TMP/err" | grep -q '^hexplan: error: --period bins a trace.s arrivals: it needs --trace$'; then ok; else fail "--period without --trace message"; fi
run schedule -c $C -w $W --trace "$TMP/t.csv"
expect_rc 2 "--trace without --period"
if head -n 1 "$TMP/err" | grep -q '^hexplan: error: --trace needs --period S'; then ok; else fail "--trace without --period message"; fi
run schedule -c $C -w $W --mode disagg
expect_rc 2 "an unsupported mode"
if head -n 1 "$TMP/err" | grep -q '^hexplan: error: --mode must be colocated or compose, not "disagg"$'; then ok; else fail "--mode message"; fi
run schedule -c $C
expect_rc 2 "no workload"

# A time limit reached before a period has a plan: exit 4, the period named.
run schedule -c $C -w $W --time-limit 0.001
expect_rc 4 "a time limit too short for any plan"
expect_err_line '^hexplan: error: period 0 \(2 req/s from 0 s\): ' "the period cut short is named"

# A period no plan carries: exit 3, the period named, no file written.
python3 - $W "$TMP/huge.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
w["stages"] = [{"rate_rps": 2, "duration_s": 3600}, {"rate_rps": 100000, "duration_s": 3600}]
json.dump(w, open(sys.argv[2], "w"))
PY
echo keep >"$TMP/old.json"
run schedule -c $C -w "$TMP/huge.json" -o "$TMP/old.json"
expect_rc 3 "a period beyond the cluster"
expect_err_line '^hexplan: error: period 1 \(100000 req/s from 3600 s\): .*at most [0-9.]+ req/s\)$' "the period is named"
[ "$(cat "$TMP/old.json")" = keep ] && ok || fail "a failed schedule replaced the output file"

finish
