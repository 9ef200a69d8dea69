#!/bin/sh
# plan --mode pipeline --objective throughput (Helix: no latency SLO, the
# max-flow of tokens), its flow figures in the plan and the table, the flow
# never falling as the TPOT SLO is loosened, --weights-mem-frac and
# --placement (a given placement judged by the same max-flow).
. "$(dirname "$0")/../lib.sh"

C=examples/clusters/helix-24.json
W=examples/workloads/pipeline.json

# The flow of the plan never falls as the TPOT SLO is loosened, and no SLO
# (--objective throughput) is at least the loosest.
for t in 300 1000 2000 60000; do
	sed "s/\"tpot_ms\": 1000/\"tpot_ms\": $t/; s/\"ttft_ms\": 30000/\"ttft_ms\": 600000/" $W >"$TMP/w$t.json"
	run plan -c $C -w "$TMP/w$t.json" --mode pipeline -o "$TMP/p$t.json"
	expect_rc 0 "pipeline plan at TPOT $t ms"
done
run plan -c $C -w $W --mode pipeline --objective throughput -o "$TMP/thr.json"
expect_rc 0 "pipeline plan with --objective throughput"
run check -p "$TMP/thr.json" -c $C
expect_rc 0 "check accepts the throughput plan"
python3 - "$TMP" <<'PY' && ok || fail "flow monotone in the TPOT SLO"
import json, sys
d = sys.argv[1]
flows = [json.load(open("%s/p%s.json" % (d, t)))["predicted"]["flow_tps"]
         for t in ("300", "1000", "2000", "60000", "thr")[:4]]
flows.append(json.load(open(d + "/thr.json"))["predicted"]["flow_tps"])
assert all(a <= b * (1 + 1e-9) for a, b in zip(flows, flows[1:])), flows
assert flows[0] < flows[-1], flows
PY
python3 - "$TMP/thr.json" $W <<'PY' && ok || fail "flow figures of the throughput plan"
import json, sys
p, w = json.load(open(sys.argv[1]))["predicted"], json.load(open(sys.argv[2]))
# the means hexplan takes (of the capped lengths) are within 5% of these
P, O = w["prompt_tokens"]["mean"], w["output_tokens"]["mean"]
assert p["flow_tps"] > 0 and p["capacity_rps"] > 0
o = p["flow_tps"] / p["capacity_rps"]
pr = (p["flow_total_tps"] / p["flow_tps"] - 1) * o
assert abs(o / O - 1) < 0.05 and abs(pr / P - 1) < 0.05, (p, o, pr)
PY
run plan -p "$TMP/thr.json" --format table
expect_rc 0 "table of the throughput plan"
grep -Eq '^flow: [0-9]+\.[0-9] generated tokens/s, [0-9]+\.[0-9] prompt \+ generated tokens/s, [0-9]+\.[0-9]{3} req/s$' "$TMP/out" && ok ||
	fail "flow line of the table"
run plan -c $C -w $W --mode pipeline --objective throughput
cmp -s "$TMP/out" "$TMP/thr.json" && ok || fail "throughput plan is not deterministic"

# Other modes refuse --objective throughput.
for m in colocated disagg baseline auto; do
	run plan -c $C -w $W --mode $m --objective throughput
	expect_rc 2 "--objective throughput with --mode $m"
	grep -q '^hexplan: error: --objective throughput is for --mode pipeline$' "$TMP/err" && ok ||
		fail "--objective throughput message for $m"
done
run plan -c $C -w $W --mode pipeline --objective speed
expect_rc 2 "--objective speed"
grep -q '^hexplan: error: --objective must be capacity, cost, latency or throughput, not "speed"$' "$TMP/err" && ok ||
	fail "--objective speed message"

# --weights-mem-frac: the weights take at most that share of each GPU.
run plan -c $C -w $W --mode pipeline --objective throughput --weights-mem-frac 0.5 -o "$TMP/half.json"
expect_rc 0 "--weights-mem-frac 0.5"
run check -p "$TMP/half.json" -c $C
expect_rc 0 "check accepts the --weights-mem-frac plan"
python3 - "$TMP/half.json" "$TMP/thr.json" <<'PY' && ok || fail "half the memory: fewer layers on the largest fragment"
import json, sys
def most(path):
    return max(g["stages"][0]["layers"][1] - g["stages"][0]["layers"][0]
               for g in json.load(open(path))["groups"])
assert most(sys.argv[1]) < most(sys.argv[2]), (most(sys.argv[1]), most(sys.argv[2]))
PY
run plan -c $C -w $W --mode pipeline --weights-mem-frac 0.05
expect_rc 3 "--weights-mem-frac too small for the model"
expect_err_line '^hexplan: error: memory: the nodes hold [0-9]+ of the 80 layers of llama-2-70b in all \(each with a KV reserve of [0-9]+ tokens\); no placement covers the model$' "--weights-mem-frac 0.05 message"
for f in 0 -1 1.5 x; do
	run plan -c $C -w $W --mode pipeline --weights-mem-frac "$f"
	expect_rc 2 "--weights-mem-frac $f"
done
grep -q '^hexplan: error: --weights-mem-frac must be a number from 0 to 1, not "x"$' "$TMP/err" && ok ||
	fail "--weights-mem-frac x message"
run plan -c $C -w $W --mode pipeline --weights-mem-frac 0
grep -q '^hexplan: error: --weights-mem-frac must be above 0 (the share of each GPU.s memory the weights may take), not "0"$' "$TMP/err" && ok ||
	fail "--weights-mem-frac 0 message"
run plan -c $C -w $W --mode colocated --weights-mem-frac 0.5
expect_rc 2 "--weights-mem-frac outside pipeline"
grep -q '^hexplan: error: --weights-mem-frac is for --mode pipeline$' "$TMP/err" && ok ||
	fail "--weights-mem-frac usage message"

# --placement: the planner's own placement, given back, is judged at its
# flow or more (Helix's rule for hops only adds edges).
python3 - "$TMP/thr.json" "$TMP/own.csv" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    f.write("node,first,last\n")
    for g in p["groups"]:
        a, b = g["stages"][0]["layers"]
        f.write("%s,%d,%d\n" % (g["replicas"][0]["placement"][0][0].split(":")[0], a, b))
PY
run plan -c $C -w $W --mode pipeline --objective throughput --placement "$TMP/own.csv" -o "$TMP/own.json"
expect_rc 0 "--placement of the planner's own placement"
run check -p "$TMP/own.json" -c $C
expect_rc 0 "check accepts the evaluated placement"
python3 - "$TMP/own.json" "$TMP/thr.json" <<'PY' && ok || fail "own placement judged at its flow"
import json, sys
a, b = (json.load(open(x))["predicted"]["flow_tps"] for x in sys.argv[1:])
assert a >= b * (1 - 1e-9), (a, b)
PY
# Overlapping ranges (Helix's rule: a node takes tokens at any layer it
# holds): Llama 3.1 8B on two A100s holding [0, 20) and two L4s, one
# holding [16, 32) (it takes the tokens at layer 20), one [20, 32).
printf 'node,first,last\na100-0,0,20\na100-1,0,20\nl4-0,16,32\nl4-1,20,32\n' >"$TMP/overlap.csv"
run plan -c $C -w $W -m llama-3.1-8b --mode pipeline --objective throughput --placement "$TMP/overlap.csv" -o "$TMP/overlap.json"
expect_rc 0 "--placement with overlapping ranges"
run check -p "$TMP/overlap.json" -c $C
expect_rc 0 "check accepts hops into a stage holding the hop's layer"
run simulate -p "$TMP/overlap.json" -w $W --requests 100
expect_rc 0 "simulate the overlapping placement"
python3 - "$TMP/overlap.json" <<'PY' && ok || fail "overlapping placement carries flow through every node"
import json, sys
p = json.load(open(sys.argv[1]))
assert len(p["groups"]) == 4 and p["predicted"]["flow_tps"] > 0, p["predicted"]
l4 = [g for g in p["groups"] if g["stages"][0]["layers"] == [16, 32]]
assert len(l4) == 1, p["groups"]
PY
printf 'node,first\n' >"$TMP/bad.csv"
run plan -c $C -w $W --mode pipeline --placement "$TMP/bad.csv"
expect_rc 1 "--placement with a bad header"
expect_err_line '^hexplan: error: .*bad.csv:1: expected the header "node,first,last"$' "--placement header message"
printf 'node,first,last\nnope,0,80\n' >"$TMP/bad.csv"
run plan -c $C -w $W --mode pipeline --placement "$TMP/bad.csv"
expect_rc 1 "--placement of an unknown node"
expect_err_line '^hexplan: error: .*bad.csv:2: no node "nope" in the cluster$' "--placement node message"
printf 'node,first,last\na100-0,0,10\na100-0,10,20\n' >"$TMP/bad.csv"
run plan -c $C -w $W --mode pipeline --placement "$TMP/bad.csv"
expect_rc 1 "--placement of a node twice"
expect_err_line '^hexplan: error: .*bad.csv:3: node "a100-0" placed twice$' "--placement twice message"
printf 'node,first,last\na100-0,40,40\n' >"$TMP/bad.csv"
run plan -c $C -w $W --mode pipeline --placement "$TMP/bad.csv"
expect_rc 1 "--placement of an empty range"
expect_err_line '^hexplan: error: .*bad.csv:2: last must be a layer after first, at most 80$' "--placement range message"
printf 'node,first,last\nt4-0,0,80\n' >"$TMP/bad.csv"
run plan -c $C -w $W --mode pipeline --placement "$TMP/bad.csv"
expect_rc 3 "--placement beyond a node's memory"
expect_err_line '^hexplan: error: .*bad.csv:2: node "t4-0" cannot hold layers \[0, 80\) of llama-2-70b \(memory, with a KV reserve of [0-9]+ tokens\)$' "--placement memory message"
printf 'node,first,last\na100-0,0,20\n' >"$TMP/bad.csv"
run plan -c $C -w $W --mode pipeline --placement "$TMP/bad.csv"
expect_rc 3 "--placement that covers no chain"
expect_err_line '^hexplan: error: .*bad.csv: the placement carries no traffic \(no chain of its nodes covers the 80 layers of llama-2-70b\)$' "--placement chain message"
run plan -c $C -w $W --mode disagg --placement "$TMP/own.csv"
expect_rc 2 "--placement outside pipeline"

finish
