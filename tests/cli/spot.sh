#!/bin/sh
# Spot capacity: offers with "spot": true and "preemptions_per_hour"; compose
# keeps the SLO at --slo-probability; check recomputes the arithmetic;
# simulate --preempt-spot takes spot nodes back at their rate (seeded), and
# the covered plan keeps the SLO there while the uncovered one does not.
. "$(dirname "$0")/../lib.sh"

C=tests/data/spot/cluster.json
W=examples/workloads/chat.json

# The covered plan (default target 0.99) and one planned for a target so low
# that it takes no cover at all.
run plan -c $C -w $W --mode compose -o "$TMP/cover.json"
expect_rc 0 "compose with spot offers"
run plan -c $C -w $W --mode compose --slo-probability 0.000001 -o "$TMP/bare.json"
expect_rc 0 "compose with no cover"
for p in cover bare; do
	run check -p "$TMP/$p.json" -c $C
	expect_rc 0 "check accepts the $p plan's rent and spot arithmetic"
done
python3 - "$TMP/cover.json" "$TMP/bare.json" "$C" <<'PY' && ok || fail "spot sections"
import json, math, sys
cover, bare, c = (json.load(open(f)) for f in sys.argv[1:4])
for p in (cover, bare):
    s = p["spot"]
    spot = [r for r in p["rent"] if r.get("spot")]
    assert spot and all(r["preemptions_per_hour"] == 6 for r in spot), p["rent"]
    # the window: a replacement node plus 16 GB of weights at 2 GB/s
    assert all(abs(r["window_s"] - (120 + 16.06e9 / 2e9)) < 0.1 for r in spot), spot
    q = 1 - math.exp(-6 * spot[0]["window_s"] / 3600)
    n = s["nodes"]
    assert n == sum(r["nodes"] for r in spot), (s, spot)
    # binomial: at most survives_nodes of n down at once
    prob = sum(math.comb(n, k) * q**k * (1 - q)**(n - k) for k in range(s["survives_nodes"] + 1))
    assert abs(prob - s["slo_probability"]) < 1e-5, (prob, s)
    assert abs(s["need_rps"] - 20 / 0.9) < 1e-3, s
    assert s["on_demand_usd_per_hour"] > p["predicted"]["usd_per_hour"], s
    assert s["expected_usd_per_hour"] < p["predicted"]["usd_per_hour"], s
assert cover["spot"]["target"] == 0.99 and cover["spot"]["slo_probability"] >= 0.99, cover["spot"]
assert bare["spot"]["slo_probability"] < 0.5, bare["spot"]
# the cover costs more than no cover and less than on demand only
assert bare["predicted"]["usd_per_hour"] < cover["predicted"]["usd_per_hour"] < cover["spot"]["on_demand_usd_per_hour"]
PY
if python3 -c 'from jsonschema import Draft202012Validator' 2>/dev/null; then
	python3 - profiles/plan.schema.json "$TMP/cover.json" "$TMP/bare.json" <<'PY' && ok || fail "spot plans against the schema"
import json, sys
from jsonschema import Draft202012Validator
v = Draft202012Validator(json.load(open(sys.argv[1])))
for f in sys.argv[2:]:
    errs = list(v.iter_errors(json.load(open(f))))
    assert not errs, errs[0].message
PY
fi
# The plan reader is as strict as the schema: spot keys only on spot entries.
python3 - "$TMP/cover.json" "$TMP/half.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
del p["rent"][0]["spot"]
json.dump(p, open(sys.argv[2], "w"))
PY
run plan -p "$TMP/half.json"
expect_rc 1 "a rent entry with a rate but no spot"
expect_err_line '/rent/0: only a spot entry \("spot": true\) has a preemption rate and window$' "rate without spot"
run plan -p "$TMP/cover.json" --format table
expect_out "^spot: the SLO holds with probability 0\.99[0-9]* \(target 0\.99\)" "the summary states the probability"

# hexplan(1)'s example line (compose, Spot capacity) is what the example
# files give.
run plan -c examples/clusters/spot-mix.json -w $W --mode compose -o "$TMP/mix.json"
expect_rc 0 "plan the man page's spot example"
line=$(grep -A1 '^\.nf' man/hexplan.1 | grep '^hexplan: plan: spot: the SLO holds' | sed 's/\\//g')
[ -n "$line" ] && grep -qxF "$line" "$TMP/err" && ok || fail "the man page's spot line: $line"

# check catches spot arithmetic that does not add up.
python3 - "$TMP/cover.json" "$TMP/lie.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["spot"]["slo_probability"] = 0.5
p["spot"]["survives_nodes"] += 1
for r in p["rent"]:
    if r.get("spot"):
        r["preemptions_per_hour"] = 1
json.dump(p, open(sys.argv[2], "w"))
PY
run check -p "$TMP/lie.json" -c $C
expect_rc 1 "check refuses a plan whose spot arithmetic is wrong"
grep -q '/rent/0: preempted 1 times per hour, but the offer says 6' "$TMP/err" && ok || fail "rate against the offer"
grep -q '/spot/survives_nodes: losing [0-9]* spot nodes leaves' "$TMP/err" && ok || fail "nodes survived"
grep -q '/spot/slo_probability: ' "$TMP/err" && ok || fail "probability"

# replan onto fewer spot nodes: the spot section follows the rent (check
# recomputes it), and the probability falls below the target.
python3 - $C "$TMP/fewer.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["offers"][1]["max_count"] = 7
json.dump(c, open(sys.argv[2], "w"))
PY
run replan -p "$TMP/cover.json" -c "$TMP/fewer.json" -w $W -o "$TMP/replanned.json"
expect_rc 0 "replan a spot plan onto fewer spot nodes"
run check -p "$TMP/replanned.json" -c "$TMP/fewer.json"
expect_rc 0 "check accepts the replanned spot section"
python3 - "$TMP/replanned.json" <<'PY' && ok || fail "replanned spot section"
import json, sys
s = json.load(open(sys.argv[1]))["spot"]
assert s["nodes"] == 7 and s["slo_probability"] < s["target"], s
PY

# schedule plans each period with compose: every period's plan that rents
# spot nodes keeps the SLO at the target (a followed plan that would not is
# replaced by the period's cheapest), and check accepts them all.
run schedule -c $C -w examples/workloads/two-peaks.json --mode compose -o "$TMP/sched.json"
expect_rc 0 "schedule with spot offers"
run check -p "$TMP/sched.json" -c $C
expect_rc 0 "check accepts the spot schedule"
python3 - "$TMP/sched.json" <<'PY' && ok || fail "every period keeps the spot target"
import json, sys
ps = [p["plan"] for p in json.load(open(sys.argv[1]))["periods"] if p["plan"]]
spot = [p["spot"] for p in ps if "spot" in p]
assert spot, "no period rents spot nodes"
assert all(s["slo_probability"] >= s["target"] for s in spot), spot
PY

# The simulator takes spot nodes back at their rate (seeded): the covered
# plan keeps the SLO attainment target, the bare one misses it by far.
for p in cover bare; do
	run simulate -p "$TMP/$p.json" -w $W --rate 20 --requests 12000 --seed 1 --preempt-spot -o "$TMP/$p-sim.json"
	expect_rc 0 "simulate --preempt-spot the $p plan"
done
python3 - "$TMP/cover-sim.json" "$TMP/bare-sim.json" <<'PY' && ok || fail "attainment under preemptions"
import json, sys
cover, bare = (json.load(open(f)) for f in sys.argv[1:3])
for r in (cover, bare):
    assert r["spot"]["preemptions"] > 0 and r["spot"]["requests_moved"] > 0, r["spot"]
    assert r["requests"]["finished"] + r["requests"]["dropped"] == r["requests"]["total"]
assert cover["slo_attainment"] >= cover["slo"]["attainment_target"], cover["slo_attainment"]
assert bare["slo_attainment"] < 0.9, bare["slo_attainment"]
PY
# Seeded: the same run twice is the same run.
run simulate -p "$TMP/bare.json" -w $W --rate 20 --requests 12000 --seed 1 --preempt-spot -o "$TMP/again.json"
cmp -s "$TMP/bare-sim.json" "$TMP/again.json" && ok || fail "preemptions are seeded"
# Without preemptions the bare plan meets the SLO: the loss is the spot nodes'.
run simulate -p "$TMP/bare.json" -w $W --rate 20 --requests 12000 --seed 1
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["slo_attainment"] >= 0.99)' "$TMP/out")" = True ] &&
	ok || fail "the bare plan without preemptions"

# Errors: bad spot keys name the file and key; a target no mix reaches.
for f in bad-no-rate:'/offers/0: a spot offer needs "preemptions_per_hour" above 0' \
	bad-zero-rate:'/offers/0/preemptions_per_hour: a spot offer needs "preemptions_per_hour" above 0' \
	bad-rate-on-demand:'/offers/0/preemptions_per_hour: only a spot offer \("spot": true\) is preempted' \
	bad-spot-string:'/offers/0/spot: must be true or false'; do
	run validate -c "tests/data/spot/${f%%:*}.json"
	expect_rc 1 "${f%%:*}"
	expect_err_line "^hexplan: error: tests/data/spot/${f%%:*}\.json: ${f#*:}$" "${f%%:*}"
done
run plan -c tests/data/spot/spot-only.json -w $W --mode compose
expect_rc 3 "no mix reaches the target"
expect_err_line '^hexplan: error: no mix of spot and on-demand capacity keeps the SLO with probability 0\.99 \(at most 0\.0[0-9]+\)$' "no mix"
run plan -c $C -w $W --mode colocated --slo-probability 0.9
expect_rc 2 "--slo-probability is for compose"
grep -q -- '--slo-probability needs --mode compose' "$TMP/err" && ok || fail "--slo-probability mode"
run simulate -p "$TMP/cover.json" -w $W --capacity --preempt-spot
expect_rc 2 "--capacity refuses --preempt-spot"
grep -q -- 'no --preempt-spot' "$TMP/err" && ok || fail "--capacity --preempt-spot message"

finish
