#!/bin/sh
# Expert parallelism in the plan format: a hand-written EP plan for
# qwen3-30b-a3b on one H100 node (and one over two nodes) reads, writes back
# with its keys, passes check, simulates, and its replica is priced as
# 'estimate --ep' prices the same shape; broken EP stages fail check at
# their pointer, and out-of-range keys fail the reader.
. "$(dirname "$0")/../lib.sh"

EP=tests/data/ep
ONE=$EP/qwen3-30b-a3b-ep8.json
TWO=$EP/qwen3-30b-a3b-ep16-2nodes.json
NODE=examples/clusters/h100-node.json
MIXED=examples/clusters/mixed.json
CHAT=examples/workloads/chat.json

# --- read and written -------------------------------------------------------
run plan -p $ONE
expect_rc 0 "plan -p EP plan"
cp "$TMP/out" "$TMP/once.json"
[ "$(jnum groups.0.stages.0.ep)/$(jnum groups.0.stages.0.dp_attention)" = "8/8" ] && ok ||
	fail "EP keys written back: $(jnum groups.0.stages.0.ep)/$(jnum groups.0.stages.0.dp_attention)"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["groups"][0]["stages"][0]
assert "redundant_experts" not in s and "eplb_imbalance" not in s, s' "$TMP/once.json" &&
	ok || fail "unset EP keys written"
run plan -p "$TMP/once.json"
cmp -s "$TMP/out" "$TMP/once.json" && ok || fail "EP plan written twice differs"
run plan -p $ONE --format table
expect_rc 0 "plan -p EP plan as a table"
expect_out '^g0 +aggregated qwen3-30b-a3b h100-sxm x8 \[0,48\) ep8 dp8 ' "table says the EP shape"

# --- check ------------------------------------------------------------------
run check -p $ONE -c $NODE --format table
expect_rc 0 "check EP plan on one node"
expect_out "ok: 1 groups, 1 replicas, 8 of 8 GPUs" "check EP plan line"
run check -p $TWO -c $MIXED --format table
expect_rc 0 "check EP plan on two nodes"
expect_out "ok: 1 groups, 1 replicas, 16 of 64 GPUs" "check two-node EP plan line"

# --- priced as estimate prices the shape -----------------------------------
# replan with nothing changed keeps the replica and predicts its capacity
# with the cost model; estimate --ep answers for the same shape.
for spec in "$ONE:$NODE:--ep 8 --dp-attention" "$TWO:$MIXED:--ep 16 --dp-attention --nic-gbps 100"; do
	plan=${spec%%:*}
	rest=${spec#*:}
	cluster=${rest%%:*}
	opts=${rest#*:}
	run replan -p "$plan" -c "$cluster" -w $CHAT
	expect_rc 0 "replan $plan"
	got=$(jnum groups.0.predicted.capacity_rps)
	# shellcheck disable=SC2086
	run estimate -m qwen3-30b-a3b -g h100-sxm $opts -w $CHAT --format json
	expect_rc 0 "estimate $opts"
	want=$(jnum capacity.rps)
	[ "$got" = "$want" ] && ok || fail "$plan: plan capacity $got, estimate $opts $want"
done
# Redundant experts and an imbalance are priced as estimate's options.
python3 - $ONE "$TMP/red.json" <<'PY' && ok || fail "redundant variant"
import json, sys
p = json.load(open(sys.argv[1]))
p["groups"][0]["stages"][0].update({"redundant_experts": 8, "eplb_imbalance": 1.1})
json.dump(p, open(sys.argv[2], "w"))
PY
run plan -p "$TMP/red.json"
[ "$(jnum groups.0.stages.0.redundant_experts)/$(jnum groups.0.stages.0.eplb_imbalance)" = "8/1.1" ] &&
	ok || fail "redundant_experts and eplb_imbalance written back"
run replan -p "$TMP/red.json" -c $NODE -w $CHAT
got=$(jnum groups.0.predicted.capacity_rps)
run estimate -m qwen3-30b-a3b -g h100-sxm --ep 8 --dp-attention --redundant-experts 8 --eplb-imbalance 1.1 -w $CHAT --format json
want=$(jnum capacity.rps)
[ "$got" = "$want" ] && ok || fail "redundant: plan capacity $got, estimate $want"
run estimate -m qwen3-30b-a3b -g h100-sxm --ep 8 --dp-attention -w $CHAT --format json
[ "$(jnum capacity.rps)" != "$want" ] && ok || fail "redundant experts and imbalance change nothing"
# The NIC comes from the replica's tp_links: the same plan at 400 Gb/s
# is priced as estimate --nic-gbps 400.
python3 - $TWO "$TMP/fast.json" <<'PY' && ok || fail "fast NIC variant"
import json, sys
p = json.load(open(sys.argv[1]))
p["groups"][0]["replicas"][0]["tp_links"][0]["bw_gbps"] = 400
json.dump(p, open(sys.argv[2], "w"))
PY
run replan -p "$TMP/fast.json" -c $MIXED -w $CHAT
got=$(jnum groups.0.predicted.capacity_rps)
run estimate -m qwen3-30b-a3b -g h100-sxm --ep 16 --dp-attention --nic-gbps 400 -w $CHAT --format json
want=$(jnum capacity.rps)
[ "$got" = "$want" ] && ok || fail "400 Gb/s: plan capacity $got, estimate $want"
run estimate -m qwen3-30b-a3b -g h100-sxm --ep 16 --dp-attention --nic-gbps 100 -w $CHAT --format json
[ "$(jnum capacity.rps)" != "$want" ] && ok || fail "the NIC changes nothing"

# --- simulated ----------------------------------------------------------------
run simulate -p $ONE -w $CHAT --requests 300
expect_rc 0 "simulate EP plan"
[ "$(jnum requests.finished)" = 300 ] && ok || fail "simulate: $(jnum requests.finished) of 300 finished"
# The same GPUs without data-parallel attention: one rank's token budget
# and sequences, so at a load it needs more, fewer requests keep the SLO.
python3 - $ONE "$TMP/nodp.json" <<'PY' && ok || fail "no-DP variant"
import json, sys
p = json.load(open(sys.argv[1]))
del p["groups"][0]["stages"][0]["dp_attention"]
json.dump(p, open(sys.argv[2], "w"))
PY
run simulate -p $ONE -w $CHAT --requests 2000 --rate 150
dp=$(jnum goodput_rps)
run simulate -p "$TMP/nodp.json" -w $CHAT --requests 2000 --rate 150
expect_rc 0 "simulate EP plan without DP attention"
nodp=$(jnum goodput_rps)
python3 -c "import sys; sys.exit(not float('$dp') > 1.5 * float('$nodp'))" && ok ||
	fail "goodput at 150 req/s: DP attention $dp, without $nodp"

# --- broken EP stages: check names the key --------------------------------
# NAME|CHANGE (python on stage s)|MODEL|EXPECTED LINE after the pointer prefix
cat >"$TMP/cases" <<'EOF'
ep-not-tp|s["ep"] = 4|/groups/0/stages/0/ep: ep 4 must equal the stage's tp 8 (the experts are split over all its GPUs)
ep-experts|s["redundant_experts"] = 4|/groups/0/stages/0/ep: ep 8 does not divide the 128 experts of qwen3-30b-a3b plus 4 redundant
dp-gpus|s["dp_attention"] = 3|/groups/0/stages/0/dp_attention: 3 attention ranks do not divide the stage's 8 GPUs
dp-no-ep|del s["ep"]|/groups/0/stages/0/dp_attention: data-parallel attention on qwen3-30b-a3b, a mixture of experts, needs expert parallelism (ep)
redundant-no-ep|del s["ep"]; del s["dp_attention"]; s["redundant_experts"] = 8|/groups/0/stages/0/redundant_experts: 8 redundant experts need expert parallelism (ep)
imbalance-no-ep|del s["ep"]; del s["dp_attention"]; s["eplb_imbalance"] = 1.1|/groups/0/stages/0/eplb_imbalance: an EPLB imbalance needs expert parallelism (ep)
EOF
while IFS='|' read -r name change line; do
	python3 - $ONE "$TMP/$name.json" "$change" <<'PY' || fail "$name: variant"
import json, sys
p = json.load(open(sys.argv[1]))
s = p["groups"][0]["stages"][0]
exec(sys.argv[3])
json.dump(p, open(sys.argv[2], "w"))
PY
	run check -p "$TMP/$name.json" -c $NODE
	expect_rc 1 "check $name"
	printf 'hexplan: error: %s: %s\n' "$TMP/$name.json" "$line" >"$TMP/want"
	cmp -s "$TMP/err" "$TMP/want" && ok || {
		fail "check $name: stderr differs"
		diff "$TMP/want" "$TMP/err" | sed 's/^/  /' >&2
	}
done <"$TMP/cases"

# A dense model cannot be expert parallel.
python3 - tests/data/plans/mixed-baseline.json "$TMP/dense.json" <<'PY' && ok || fail "dense variant"
import json, sys
p = json.load(open(sys.argv[1]))
s = p["groups"][0]["stages"][0]
s["ep"] = s["tp"]
json.dump(p, open(sys.argv[2], "w"))
PY
run check -p "$TMP/dense.json" -c $MIXED
expect_rc 1 "check EP on a dense model"
expect_err_line '/groups/0/stages/0/ep: ep 4: expert parallelism needs a mixture-of-experts model: llama-3.1-70b is dense$' "dense EP message"
# The heads: 12 GPUs hold the 128 experts with 4 redundant ones; TP 12
# does not divide the 32 heads, nor attention TP 6 (2 ranks); TP 4 (3
# ranks) does.
for spec in '0|tp|tp 12 does not divide the 32 attention heads of qwen3-30b-a3b' \
	'2|dp_attention|attention tp 6 (tp 12 over 2 ranks) does not divide the 32 attention heads of qwen3-30b-a3b' \
	'3||'; do
	dp=${spec%%|*}
	rest=${spec#*|}
	key=${rest%%|*}
	msg=${rest#*|}
	python3 - $TWO "$TMP/heads.json" "$dp" <<'PY' || fail "heads variant $dp"
import json, sys
p = json.load(open(sys.argv[1]))
s = p["groups"][0]["stages"][0]
s.update({"tp": 12, "ep": 12, "redundant_experts": 4})
s.pop("dp_attention")
if sys.argv[3] != "0":
    s["dp_attention"] = int(sys.argv[3])
r = p["groups"][0]["replicas"][0]
r["placement"][0] = r["placement"][0][:12]
json.dump(p, open(sys.argv[2], "w"))
PY
	run check -p "$TMP/heads.json" -c $MIXED
	if [ -z "$key" ]; then
		expect_rc 0 "check tp 12 over $dp ranks"
	else
		expect_rc 1 "check tp 12 over $dp ranks"
		re=$(printf '%s' "$msg" | sed 's/[()]/\\&/g')
		expect_err_line ": /groups/0/stages/0/$key: $re\$" "heads message, $dp ranks"
	fi
done

# A broken EP stage does not simulate either: the cost model's own rule.
run simulate -p "$TMP/ep-not-tp.json" -w $CHAT --requests 10
expect_rc 1 "simulate ep != tp"
expect_err_line "/groups/0/stages: expert parallel size 4 must equal the stage's 8 GPUs$" "simulate ep != tp message"

# Memory with EP, by the cluster's GPUs: mixtral-8x7b's experts over 4
# L40S fit; over 2 (attention and embeddings whole on each of the 2 ranks)
# they do not, short by what estimate says for the same shape.
MIX=$EP/mixtral-8x7b-ep4-l40s.json
run check -p $MIX -c $MIXED --format table
expect_rc 0 "check mixtral EP 4 on 4 L40S"
python3 - $MIX "$TMP/mem.json" <<'PY' && ok || fail "memory variant"
import json, sys
p = json.load(open(sys.argv[1]))
p["groups"][0]["stages"][0].update({"tp": 2, "ep": 2, "dp_attention": 2})
p["groups"][0]["replicas"][0]["placement"] = [["l40s-0:0", "l40s-0:1"]]
json.dump(p, open(sys.argv[2], "w"))
PY
run check -p "$TMP/mem.json" -c $MIXED
expect_rc 1 "check mixtral EP 2 on 2 L40S"
expect_err_line '/groups/0/replicas/0/placement/0: does not fit on the l40s GPUs of node "l40s-0": weights (44\.9[5-9]|45\.0[0-4]) GiB \+ reserve 2\.00 GiB' "memory message"
run estimate -m mixtral-8x7b -g l40s --ep 2 --dp-attention
expect_rc 3 "estimate mixtral EP 2 on L40S"
expect_err_line 'each GPU needs 45\.0 GiB of weights' "estimate agrees on the weights"

# --- colocated considers EP shapes -----------------------------------------
# On one H100 node, code requests (long prompts): EP 8 with 8 attention
# ranks carries more than any TP split of the node (estimate: 100.2 req/s;
# TP 8 57.1, two TP 4 74.1), so the planner writes it, check passes it,
# and its capacity is estimate's for the shape.
CODE=examples/workloads/code.json
run plan -c $NODE -w $CODE -m qwen3-30b-a3b --mode colocated -o "$TMP/col.json"
expect_rc 0 "colocated qwen3-30b-a3b, code"
python3 - "$TMP/col.json" <<'PY' && ok || fail "colocated did not choose EP 8 x 8: $(head -c 300 "$TMP/col.json")"
import json, sys
g = json.load(open(sys.argv[1]))["groups"]
assert len(g) == 1 and len(g[0]["replicas"]) == 1, g
s = g[0]["stages"][0]
assert (s["tp"], s.get("ep"), s.get("dp_attention")) == (8, 8, 8), s
PY
run check -p "$TMP/col.json" -c $NODE --format table
expect_rc 0 "check the colocated EP plan"
cp "$TMP/col.json" "$TMP/colplan.json"
run estimate -m qwen3-30b-a3b -g h100-sxm --ep 8 --dp-attention -w $CODE --format json
want=$(jnum capacity.rps)
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["groups"][0]["predicted"]["capacity_rps"])' "$TMP/colplan.json" >"$TMP/got"
[ "$(cat "$TMP/got")" = "$want" ] && ok || fail "colocated EP capacity $(cat "$TMP/got"), estimate $want"
# A dense model gets no EP shape.
run plan -c $NODE -w $CODE -m llama-3.1-8b --mode colocated
expect_rc 0 "colocated llama-3.1-8b"
grep -q '"ep"' "$TMP/out" && fail "EP keys on a dense model's plan" || ok

# --- export refuses EP stages until the engines' flags are written ---------
for t in launch k8s; do
	run export -p $ONE --to $t --lossy
	expect_rc 1 "export --to $t an EP plan"
	expect_err_line "^hexplan: error: $ONE: group g0 stage 0 is expert parallel \(ep 8, dp_attention 8\): its engine flags are not written yet, so it cannot be exported to $t \(--to dot draws it\)\$" "export $t refusal"
done
run export -p $ONE --to dot
expect_rc 0 "export --to dot an EP plan"

# --- the reader's bounds ---------------------------------------------------
for spec in 'ep|0|must be a positive integer, not 0' 'dp_attention|2.5|must be an integer, not a number' \
	'redundant_experts|-1|must be between 0 and 4096, not -1' 'eplb_imbalance|0.5|must be between 1 and 100, not 0.5'; do
	key=${spec%%|*}
	rest=${spec#*|}
	val=${rest%%|*}
	msg=${rest#*|}
	python3 - $ONE "$TMP/r-$key.json" "$key" "$val" <<'PY' || fail "reader variant $key"
import json, sys
p = json.load(open(sys.argv[1]))
p["groups"][0]["stages"][0][sys.argv[3]] = json.loads(sys.argv[4])
json.dump(p, open(sys.argv[2], "w"))
PY
	run plan -p "$TMP/r-$key.json"
	expect_rc 1 "reader $key $val"
	expect_err_line ": /groups/0/stages/0/$key: $msg\$" "reader $key message"
done

finish
