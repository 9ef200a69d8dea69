#!/bin/sh
# plan --mode bo: a Pareto front of plans over routing splits and
# deployments; the front is non-dominated and agrees with its plans and the
# profile, every plan passes check, the output is deterministic, --prefer
# picks the right point, the SVG renders, and the errors.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

C=examples/clusters/bo-24.json
W=examples/workloads/llama-8b-70b.json
BO="--mode bo --budget 30 --max-evals 40"

# first_line PATTERN DESCRIPTION: usage errors print one line, then the usage.
first_line() {
	head -n 1 "$TMP/err" | grep -Eq -- "$1" && ok || fail "$2: first stderr line does not match /$1/"
}

# shellcheck disable=SC2086
run plan -c $C -w $W $BO -o "$TMP/p.json" --front "$TMP/f.json" --plot "$TMP/f.svg"
expect_rc 0 "bo plan"
[ ! -s "$TMP/out" ] && ok || fail "bo with -o prints nothing"
run check -p "$TMP/p.json" -c $C
expect_rc 0 "check accepts the chosen plan"

# The front: non-dominated, inside the reference, in cost order, each
# point's figures those of its plan and of the profile's split.
python3 - "$TMP/f.json" "$TMP/p.json" $W "$TMP" <<'PY' && ok || fail "front document"
import json, sys
f, p, w = (json.load(open(x)) for x in sys.argv[1:4])
q = w["quality"]
assert f["schema"] == "hexplan.front" and f["version"] == 1 and f["mode"] == "bo"
assert f["objectives"] == ["usd_per_hour", "latency_ms", "quality"]
ref = f["reference"]
assert ref["usd_per_hour"] == 30 and ref["quality"] == q["floor"], ref
s = f["search"]
assert s["evaluations"] == 40 and s["acquisition"] == "parego" and s["seed"] == 1, s
pts = f["points"]
assert len(pts) >= 3, len(pts)
assert 0 < f["hypervolume"] < 1
def obj(x):
    return (x["usd_per_hour"], x["latency_ms"], -x["quality"])
for i, a in enumerate(pts):
    for j, b in enumerate(pts):
        if i != j:
            oa, ob = obj(a), obj(b)
            assert not (all(u <= v for u, v in zip(ob, oa)) and ob != oa), (i, j, a, b)
    assert a["usd_per_hour"] <= ref["usd_per_hour"] and a["latency_ms"] <= ref["latency_ms"]
    assert a["quality"] >= q["floor"]
    frac = [r["fraction"] for r in a["routing"]]
    assert [r["model"] for r in a["routing"]] == q["models"]
    assert abs(sum(frac) - 1) < 1e-9
    n = len(q["samples"])
    qual = sum(fr * sum(s["scores"][m] for s in q["samples"]) / n for m, fr in enumerate(frac))
    assert abs(qual - a["quality"]) < 1e-3, (qual, a["quality"])
    pl = a["plan"]
    assert pl["mode"] == "bo"
    assert abs(pl["predicted"]["usd_per_hour"] - a["usd_per_hour"]) < 1e-6 * a["usd_per_hour"], (pl["predicted"], a)
    assert abs(pl["predicted"]["quality"] - a["quality"]) < 1e-4
    # the ingress sends each model its fraction
    share = {}
    model_of = {g["name"]: g["model"] for g in pl["groups"]}
    for r in pl["routing"]["ingress"]:
        share[model_of[r["group"]]] = share.get(model_of[r["group"]], 0) + r["weight"]
    for r in a["routing"]:
        assert abs(share.get(r["model"], 0) - r["fraction"]) < 1e-5, (share, a["routing"])
    json.dump(pl, open("%s/pt%d.json" % (sys.argv[4], i), "w"))
assert [obj(x)[:2] for x in pts] == sorted(obj(x)[:2] for x in pts)
assert pts[f["chosen"]]["plan"] == p, "the chosen point's plan is the plan written"
assert f["prefer"] == "balanced"
PY
# every plan of the front passes check
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["points"]))' "$TMP/f.json")
i=0
while [ "$i" -lt "$n" ]; do
	run check -p "$TMP/pt$i.json" -c $C
	expect_rc 0 "check accepts front plan $i"
	i=$((i + 1))
done

# Deterministic: the same inputs and seed give the same bytes; another seed
# another search.
# shellcheck disable=SC2086
run plan -c $C -w $W $BO -o "$TMP/p2.json" --front "$TMP/f2.json" --plot "$TMP/f2.svg"
cmp -s "$TMP/p.json" "$TMP/p2.json" && cmp -s "$TMP/f.json" "$TMP/f2.json" &&
	cmp -s "$TMP/f.svg" "$TMP/f2.svg" && ok || fail "bo is not deterministic"
# shellcheck disable=SC2086
run plan -c $C -w $W $BO --seed 7 --front "$TMP/f7.json"
expect_rc 0 "bo --seed 7"
cmp -s "$TMP/f.json" "$TMP/f7.json" && fail "another seed gave the same front" || ok
# without -o the plan goes to stdout
cmp -s "$TMP/out" "$TMP/p.json" && fail "seed 7's plan equals seed 1's" || ok

# --prefer picks the least cost, the least latency, the best quality.
for pref in cost latency quality; do
	# shellcheck disable=SC2086
	run plan -c $C -w $W $BO --prefer $pref --front "$TMP/f-$pref.json"
	expect_rc 0 "bo --prefer $pref"
	python3 - "$TMP/f-$pref.json" "$TMP/out" $pref <<'PY' && ok || fail "--prefer $pref"
import json, sys
f, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
pref = sys.argv[3]
pts = f["points"]
c = pts[f["chosen"]]
assert f["prefer"] == pref and c["plan"] == p
key = {"cost": lambda x: x["usd_per_hour"], "latency": lambda x: x["latency_ms"],
       "quality": lambda x: -x["quality"]}[pref]
assert key(c) == min(key(x) for x in pts), (c, pref)
PY
done

# The plot: an SVG with axes in units, the legend and the chosen point,
# that renders to PNG.
grep -q 'cost (USD per hour)' "$TMP/f.svg" && grep -q 'latency, end to end .*(ms)' "$TMP/f.svg" &&
	grep -q 'quality (0-100)' "$TMP/f.svg" && grep -q 'chosen (balanced)' "$TMP/f.svg" &&
	ok || fail "plot labels"
if command -v rsvg-convert >/dev/null 2>&1; then
	rsvg-convert -o "$TMP/f.png" "$TMP/f.svg" 2>"$TMP/err" && [ ! -s "$TMP/err" ] &&
		[ "$(head -c 4 "$TMP/f.png" | tail -c 3)" = PNG ] && ok || fail "rsvg-convert renders the plot"
else
	fail "rsvg-convert is missing (./quickstart installs librsvg2-bin)"
fi

# A time limit cuts the pricing of the models' shapes or the search after
# its first deployment: a plan that says so, and check accepts it; or,
# when a model has no shape priced by then, exit 4 naming it.
# shellcheck disable=SC2086
run plan -c $C -w $W $BO --time-limit 0.001 -o "$TMP/t.json"
if [ "$rc" -eq 4 ]; then
	expect_err_line "^hexplan: error: the time limit was reached before llama-3\.1-(8b|70b)'s shapes were priced\$" "bo --time-limit: exit 4 names the unpriced model"
else
	expect_rc 0 "bo --time-limit"
	grep -q '"status": "time_limit"' "$TMP/t.json" && ok || fail "a cut search says time_limit"
	run check -p "$TMP/t.json" -c $C
	expect_rc 0 "check accepts the cut plan"
	run plan -p "$TMP/t.json" --format table
	expect_out '^solver: bo, time_limit, seed 1$' "the table shows the bo solver record"
fi

# --evaluate sim: the simulator scores the latency; still a non-dominated
# front of plans check accepts.
# shellcheck disable=SC2086
run plan -c $C -w $W --mode bo --budget 30 --max-evals 12 --evaluate sim -o "$TMP/s.json" --front "$TMP/fs.json"
expect_rc 0 "bo --evaluate sim"
run check -p "$TMP/s.json" -c $C
expect_rc 0 "check accepts the simulated search's plan"
python3 - "$TMP/fs.json" "$TMP/f.json" <<'PY' && ok || fail "simulated front"
import json, sys
f, fm = (json.load(open(x)) for x in sys.argv[1:3])
pts = f["points"]
assert f["search"]["evaluations"] == 12 and pts
for a in pts:
    for b in pts:
        if a is not b:
            ob = (b["usd_per_hour"], b["latency_ms"], -b["quality"])
            oa = (a["usd_per_hour"], a["latency_ms"], -a["quality"])
            assert not (all(u <= v for u, v in zip(ob, oa)) and ob != oa)
# the same configuration scores another latency than the cost model's
lat = {json.dumps(p["routing"]) + json.dumps([g["stages"] for g in p["plan"]["groups"]]) +
       json.dumps([len(g["replicas"]) for g in p["plan"]["groups"]]): p["latency_ms"] for p in fm["points"]}
for p in pts:
    key = json.dumps(p["routing"]) + json.dumps([g["stages"] for g in p["plan"]["groups"]]) + \
          json.dumps([len(g["replicas"]) for g in p["plan"]["groups"]])
    if key in lat:
        assert lat[key] != p["latency_ms"], key
PY
run plan -c $C -w $W --mode bo --evaluate exact
expect_rc 2 "--evaluate exact"
first_line '^hexplan: error: --evaluate must be model or sim, not "exact"' "--evaluate exact message"

# One model: two objectives, exact EHVI.
python3 - $W "$TMP/one.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
q = w["quality"]
q["models"] = q["models"][:1]
q["floor"] = 0
for s in q["samples"]:
    s["scores"] = s["scores"][:1]
json.dump(w, open(sys.argv[2], "w"))
PY
run plan -c $C -w "$TMP/one.json" --mode bo --budget 20 --max-evals 30 --front "$TMP/f1.json" -o "$TMP/p1.json"
expect_rc 0 "bo with one model"
python3 - "$TMP/f1.json" <<'PY' && ok || fail "one-model front"
import json, sys
f = json.load(open(sys.argv[1]))
assert f["search"]["acquisition"] == "ehvi", f["search"]
pts = f["points"]
for a in pts:
    for b in pts:
        if a is not b:
            assert not (b["usd_per_hour"] <= a["usd_per_hour"] and b["latency_ms"] <= a["latency_ms"])
costs = [a["usd_per_hour"] for a in pts]
lats = [a["latency_ms"] for a in pts]
assert costs == sorted(costs) and lats == sorted(lats, reverse=True)
PY
run check -p "$TMP/p1.json" -c $C
expect_rc 0 "check accepts the one-model plan"

# Three models (ParEGO over 12 inputs) on another cluster.
run plan -c examples/clusters/mixed.json -w examples/workloads/cascade.json --mode bo --max-evals 30 -o "$TMP/p3.json"
expect_rc 0 "bo with three models"
# On a terminal the search redraws a progress line on stderr; not otherwise.
[ ! -s "$TMP/err" ] && ok || fail "no progress line when stderr is a file"
run check -p "$TMP/p3.json" -c examples/clusters/mixed.json
expect_rc 0 "check accepts the three-model plan"

if command -v script >/dev/null 2>&1; then
	script -qec "$HX_VALGRIND $HEXPLAN plan -c $C -w $W $BO -o $TMP/tty.json" /dev/null >"$TMP/tty" 2>&1
	grep -q 'hexplan: plan: bo: iteration 1, [0-9]* evaluations, hypervolume 0\.[0-9]*' "$TMP/tty" &&
		grep -q 'iteration 2[0-9],' "$TMP/tty" && ok || fail "progress line on a terminal"
	cmp -s "$TMP/tty.json" "$TMP/p.json" && ok || fail "the plan is the same with a terminal"
else
	echo "SKIP: script (util-linux) is missing: progress line not tested"
fi

# Errors.
# shellcheck disable=SC2086
run plan -c $C -w $W $BO --prefer speed
expect_rc 2 "--prefer speed"
first_line '^hexplan: error: --prefer must be balanced, cost, latency or quality, not "speed"' "--prefer speed message"
run plan -c $C -w $W --mode route --front "$TMP/x.json"
expect_rc 2 "--front without bo"
first_line '^hexplan: error: --prefer, --max-evals, --evaluate, --front and --plot need --mode bo' "--front without bo message"
run plan -c $C -w $W --mode bo --budget -1
expect_rc 2 "--budget -1"
run plan -c $C -w $W --mode bo --max-evals 1
expect_rc 2 "--max-evals 1"
run plan -c $C -w $W --mode bo --objective cost
expect_rc 2 "--objective with bo"
run plan -c $C -w $W --mode bo -m llama-3.1-8b
expect_rc 2 "-m with bo"
first_line '^hexplan: error: --mode bo takes its models from the workload.s quality profile, not -m' "-m with bo message"
run plan -c $C -w examples/workloads/chat.json --mode bo
expect_rc 2 "bo without a quality profile"
first_line '^hexplan: error: --mode bo needs a workload with a quality profile' "no profile message"
run plan -c $C -w $W --mode bo -o "$TMP/same.json" --front "$TMP/same.json"
expect_rc 2 "--front and -o the same"
first_line '^hexplan: error: --front and -o name the same file' "--front and -o message"
python3 - examples/workloads/cascade.json "$TMP/four.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
q = w["quality"]
q["models"].append("llama-3.1-8b")
for s in q["samples"]:
    s["scores"].append(50)
json.dump(w, open(sys.argv[2], "w"))
PY
run plan -c $C -w "$TMP/four.json" --mode bo
expect_rc 1 "four models"
expect_err_line '^hexplan: error: .*four\.json: /quality/models: bo searches at most 3 models, not 4$' "four models message"
# A budget nothing fits: exit 3, naming the budget; old files untouched.
echo old >"$TMP/keep.json"
run plan -c $C -w $W --mode bo --budget 5 -o "$TMP/keep.json" --front "$TMP/keep2.json"
expect_rc 3 "budget too small"
expect_err_line '^hexplan: error: no deployment fits the budget of \$5/h and the GPUs with quality >= 74' "budget message"
[ "$(cat "$TMP/keep.json")" = old ] && [ ! -e "$TMP/keep2.json" ] && ok || fail "a failed bo run wrote files"
# A rate the GPUs cannot carry (issue 20): the rate binds, not the budget.
sed 's/"rate_rps": 100,/"rate_rps": 100000,/' $W >"$TMP/bigrate.json"
grep -q '"rate_rps": 100000,' "$TMP/bigrate.json" && ok || fail "bigrate workload"
run plan -c $C -w "$TMP/bigrate.json" --mode bo --budget 1000000
expect_rc 3 "rate too high"
expect_err_line '^hexplan: error: the workload.s rate of 100000 req/s binds: the GPUs carry less at the SLO with quality >= 74, whatever the budget$' "rate message"

finish
