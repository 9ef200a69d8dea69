#!/bin/sh
# schedule --tolerate-failures K: every period's plan is insured as plan
# --tolerate-failures insures one, so each passes check --tolerate-failures
# K at its period's rate, where the plain schedule's plans fail it with the
# node named.
. "$(dirname "$0")/../lib.sh"

C=examples/clusters/mixed.json
W=examples/workloads/two-peaks.json

run schedule -c $C -w $W -o "$TMP/plain.json"
expect_rc 0 "the plain schedule"
run schedule -c $C -w $W --tolerate-failures 1 -o "$TMP/n1.json"
expect_rc 0 "schedule --tolerate-failures 1"
[ "$(grep -Ec '^hexplan: schedule: tolerate-failures 1: [0-9]+ sets checked, 0 fail after [0-9]+ rounds?; insurance ' "$TMP/err")" -eq 6 ] &&
	ok || fail "one insurance line per period"
grep -Eq '^hexplan: schedule: 6 periods planned in [0-9.]+ s$' "$TMP/err" && ok || fail "summary line"

# Each period's plan and its rate, as files check reads.
python3 - "$TMP" <<'PY' || fail "split the schedules"
import json, sys
tmp = sys.argv[1]
w = json.load(open("examples/workloads/two-peaks.json"))
w.pop("stages")
for name in ("plain", "n1"):
    d = json.load(open("%s/%s.json" % (tmp, name)))
    for k, p in enumerate(d["periods"]):
        json.dump(p["plan"], open("%s/%s-%d.json" % (tmp, name, k), "w"))
        json.dump(dict(w, rate_rps=p["rate_rps"]), open("%s/w-%d.json" % (tmp, k), "w"))
PY
python3 - "$TMP/plain.json" "$TMP/n1.json" <<'PY' && ok || fail "the insured day"
import json, sys
plain, n1 = (json.load(open(f)) for f in sys.argv[1:3])
for a, b in zip(plain["periods"], n1["periods"]):
    t = b["plan"]["tolerate"]
    assert t["k"] == 1 and t["sets_checked"] >= 1, t
    assert t["insured"]["usd_per_hour"] == b["usd_per_hour"], (t, b["usd_per_hour"])
    # insurance adds replicas; the day still carries every period's rate
    assert b["replicas"] > a["replicas"] or t["insurance"]["gpus"] == 0, (a["replicas"], b["replicas"])
    assert b["simulated_capacity_rps"] >= b["rate_rps"], b
assert n1["totals"]["usd"] > plain["totals"]["usd"]
PY
for k in 0 1 2 3 4 5; do
	run check -p "$TMP/n1-$k.json" -c $C -w "$TMP/w-$k.json" --tolerate-failures 1
	[ "$rc" -eq 0 ] || fail "period $k's insured plan fails check --tolerate-failures 1 (exit $rc)"
done
ok
# The plain day's peak (9 req/s) fits on one node: losing it is fatal.
run check -p "$TMP/plain-3.json" -c $C -w "$TMP/w-3.json" --tolerate-failures 1
expect_rc 1 "the plain plan of the peak fails N+1"
grep -Eq '^hexplan: check: after losing node "[a-z0-9-]+": [0-9.]+ req/s at the SLO, short of the 10\.000 req/s the rate of 9 req/s needs at 90% utilization$' "$TMP/err" &&
	ok || fail "the lost node is named"

# A period that cannot be insured fails the run: a quiet hour, then one
# near what the cluster carries (580 req/s on ~679), whose capacity plan
# uses every GPU.  Exit 3, the message led by the period and naming the
# lost node, as plan --tolerate-failures names it; nothing written.
python3 - "$TMP/w2.json" <<'PY'
import json, sys
w = json.load(open("examples/workloads/chat.json"))
w["stages"] = [{"rate_rps": 20, "duration_s": 3600}, {"rate_rps": 580, "duration_s": 3600}]
json.dump(w, open(sys.argv[1], "w"))
PY
run schedule -c $C -w "$TMP/w2.json" --tolerate-failures 1 -o "$TMP/none.json"
expect_rc 3 "a period that cannot be insured"
grep -Eq '^hexplan: error: period 1 \(580 req/s from 3600 s\): no plan found that tolerates the loss of any 1 node: after losing node "h100-0" the replicas carry [0-9.]+ req/s at the SLO, short of the 644\.444 req/s the rate of 580 req/s needs at 90% utilization, and the GPUs the plan leaves free add no replica$' "$TMP/err" &&
	ok || fail "the period and the set named"
[ "$(grep -c '^hexplan: error:' "$TMP/err")" -eq 1 ] && ok || fail "one error line"
[ ! -e "$TMP/none.json" ] && ok || fail "a schedule written after exit 3"

# Usage: K must be less than the cluster's nodes.
run schedule -c $C -w $W --tolerate-failures 64
expect_rc 2 "K as large as the cluster"
grep -q "^hexplan: error: --tolerate-failures must be less than the cluster's 10 nodes, not 64$" "$TMP/err" &&
	ok || fail "the limit is named"
finish
