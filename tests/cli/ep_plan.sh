#!/bin/sh
# Expert parallelism in the plan format: a hand-written EP plan for
# qwen3-30b-a3b on one H100 node (and one over two nodes) reads, writes back
# with its keys, passes check, simulates, and its replica is priced as
# 'estimate --ep' prices the same shape; broken EP stages fail check at
# their pointer, and out-of-range keys fail the reader.  Exports write the
# engines' EP flags with the plan's sizes (launch for vLLM and SGLang, k8s
# and llm-d pods that validate), and the targets that cannot say why.
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
	expect_err_exact "$TMP/$name.json" "$line" "check $name"
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
# On one H100 node, chat requests: EP 8 with 8 attention ranks carries more
# than any TP split of the node (simulated: 211 req/s, eight TP 1 replicas
# 116), so the planner writes it, check passes it, and its capacity is
# estimate's for the shape.  Code requests (prompts of thousands of
# tokens) go the other way: a prompt is one attention rank's and the ranks
# step together, so each prompt's chunk stalls every rank's decodes
# (simulated: EP 8 39.5 req/s, eight TP 1 replicas 72.3), and the planner
# writes no EP shape.
CHAT=examples/workloads/chat.json
CODE=examples/workloads/code.json
run plan -c $NODE -w $CHAT -m qwen3-30b-a3b --mode colocated -o "$TMP/col.json"
expect_rc 0 "colocated qwen3-30b-a3b, chat"
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
run estimate -m qwen3-30b-a3b -g h100-sxm --ep 8 --dp-attention -w $CHAT --format json
want=$(jnum capacity.rps)
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["groups"][0]["predicted"]["capacity_rps"])' "$TMP/colplan.json" >"$TMP/got"
[ "$(cat "$TMP/got")" = "$want" ] && ok || fail "colocated EP capacity $(cat "$TMP/got"), estimate $want"
run plan -c $NODE -w $CODE -m qwen3-30b-a3b --mode colocated -o "$TMP/colcode.json"
expect_rc 0 "colocated qwen3-30b-a3b, code"
grep -q '"ep"' "$TMP/colcode.json" && fail "colocated chose EP for long prompts" || ok
# A dense model gets no EP shape.
run plan -c $NODE -w $CODE -m llama-3.1-8b --mode colocated
expect_rc 0 "colocated llama-3.1-8b"
grep -q '"ep"' "$TMP/out" && fail "EP keys on a dense model's plan" || ok

# --- export: the engines' expert-parallel flags ------------------------------
# The flags' values come from the plan: vLLM's --tensor-parallel-size is the
# attention TP (tp / dp_attention), --data-parallel-size the attention
# ranks, EP over both; SGLang's --tp-size is every GPU, --ep-size the ep,
# --dp-size the ranks.  argv_has FILE PROC WORDS...: process PROC of the
# JSON lines has WORDS in a row; argv_lacks FILE PROC WORD: not WORD.
argv_has() {
	python3 - "$@" <<'PY'
import json, sys
procs = [json.loads(l) for l in open(sys.argv[1]) if '"argv"' in l and '"router"' not in l]
a, want = procs[int(sys.argv[2])]["argv"], sys.argv[3:]
sys.exit(not any(a[i:i + len(want)] == want for i in range(len(a))))
PY
}
argv_lacks() {
	python3 - "$@" <<'PY'
import json, sys
procs = [json.loads(l) for l in open(sys.argv[1]) if '"argv"' in l and '"router"' not in l]
sys.exit(sys.argv[3] in procs[int(sys.argv[2])]["argv"])
PY
}
# check_argv FILE PROC DESC SPEC...: each SPEC "+w1 w2" must be there in a
# row, "-w" must not.
check_argv() {
	f=$1 n=$2 d=$3
	shift 3
	for spec in "$@"; do
		case $spec in
		+*)
			# shellcheck disable=SC2086
			argv_has "$f" "$n" ${spec#+} && ok || fail "$d: process $n lacks ${spec#+}" ;;
		-*)
			argv_lacks "$f" "$n" "${spec#-}" && ok || fail "$d: process $n has ${spec#-}" ;;
		esac
	done
}
nprocs() { grep -c '"argv"' "$1" | awk '{print $1}'; }

# One node, ep 8 x 8 attention ranks (attention TP 1).
run export -p $ONE --to launch -o "$TMP/one.jsonl"
expect_rc 0 "export --to launch EP 8 x 8"
check_argv "$TMP/one.jsonl" 0 "vLLM EP 8" "+--tensor-parallel-size 1" "+--enable-expert-parallel" \
	"+--data-parallel-size 8" "+--data-parallel-rpc-port 29500" "---headless" "---nnodes" \
	"---data-parallel-size-local" "---enable-eplb" "---enable-dbo"
run export -p $ONE --to launch --engine sglang -o "$TMP/one-sg.jsonl"
expect_rc 0 "export --to launch --engine sglang EP 8 x 8"
check_argv "$TMP/one-sg.jsonl" 0 "SGLang EP 8" "+--tp-size 8" "+--ep-size 8" "+--dp-size 8" \
	"+--enable-dp-attention" "+--enable-dp-lm-head" "+--moe-a2a-backend deepep" "---nnodes" \
	"---deepep-mode" "---moe-dense-tp-size" "---enable-eplb" "+--enable-two-batch-overlap"
# Two nodes, ep 16 x 16: one process per node; vLLM's second node starts
# its 8 DP ranks headless from rank 8, SGLang's joins by --node-rank.
run export -p $TWO --to launch -o "$TMP/two.jsonl"
expect_rc 0 "export --to launch EP 16 over 2 nodes"
[ "$(nprocs "$TMP/two.jsonl")" = 3 ] && ok || fail "EP 16: $(nprocs "$TMP/two.jsonl") lines, want 2 processes and a router"
for n in 0 1; do
	check_argv "$TMP/two.jsonl" $n "vLLM EP 16" "+--tensor-parallel-size 1" "+--enable-expert-parallel" \
		"+--data-parallel-size 16" "+--data-parallel-size-local 8" "+--data-parallel-address h100-0" \
		"+--data-parallel-rpc-port 29500" "---nnodes" "---master-addr"
done
check_argv "$TMP/two.jsonl" 0 "vLLM EP 16 head" "+--port 8000" "---headless" "---data-parallel-start-rank"
check_argv "$TMP/two.jsonl" 1 "vLLM EP 16 worker" "+--data-parallel-start-rank 8 --headless" "---port"
run export -p $TWO --to launch --engine sglang -o "$TMP/two-sg.jsonl"
expect_rc 0 "export --to launch --engine sglang EP 16 over 2 nodes"
for n in 0 1; do
	check_argv "$TMP/two-sg.jsonl" $n "SGLang EP 16" "+--tp-size 16" "+--ep-size 16" "+--dp-size 16" \
		"+--enable-dp-attention" "+--moe-a2a-backend deepep" "+--nnodes 2" "+--node-rank $n" \
		"+--dist-init-addr h100-0:29500"
done
# The scripts run: bash parses them (shellcheck where it is installed).
run export -p $TWO --to launch --format sh -o "$TMP/two-sh"
expect_rc 0 "export --to launch --format sh EP 16"
for f in "$TMP"/two-sh/*.sh; do
	bash -n "$f" && ok || fail "bash -n $f"
	if command -v shellcheck >/dev/null 2>&1; then
		shellcheck -s bash "$f" >&2 && ok || fail "shellcheck $f"
	fi
done
grep -q -- '--data-parallel-start-rank 8 --headless &$' "$TMP/two-sh/launch-h100-1.sh" && ok ||
	fail "launch-h100-1.sh: no headless DP ranks"

# 2 attention ranks of TP 4 and 8 redundant experts: EPLB's flags, in
# vLLM's form of the release (--eplb-config since 0.10.2).
python3 - $ONE "$TMP/dp2.json" <<'PY' && ok || fail "dp 2 variant"
import json, sys
p = json.load(open(sys.argv[1]))
p["groups"][0]["stages"][0].update({"dp_attention": 2, "redundant_experts": 8})
json.dump(p, open(sys.argv[2], "w"))
PY
run export -p "$TMP/dp2.json" --to launch -o "$TMP/dp2.jsonl"
expect_rc 0 "export dp 2 + redundant"
check_argv "$TMP/dp2.jsonl" 0 "vLLM dp 2" "+--tensor-parallel-size 4" "+--data-parallel-size 2" \
	"+--enable-expert-parallel" "+--enable-eplb --eplb-config {\"num_redundant_experts\":8}"
run export -p "$TMP/dp2.json" --to launch --engine-version 0.10.1 -o "$TMP/dp2-old.jsonl"
expect_rc 0 "export dp 2 + redundant for vLLM 0.10.1"
check_argv "$TMP/dp2-old.jsonl" 0 "vLLM 0.10.1 dp 2" "+--enable-eplb --num-redundant-experts 8" "---eplb-config"
run export -p "$TMP/dp2.json" --to launch --engine sglang -o "$TMP/dp2-sg.jsonl"
expect_rc 0 "export --engine sglang dp 2 + redundant"
check_argv "$TMP/dp2-sg.jsonl" 0 "SGLang dp 2" "+--tp-size 8" "+--ep-size 8" "+--dp-size 2" \
	"+--enable-dp-attention" "+--enable-eplb --ep-num-redundant-experts 8"
# Prefill and decode groups, EP 8 x 8 each on its own node: SGLang's
# DeepEP dispatch mode by role (normal for prefill, low-latency for decode).
python3 - $TWO "$TMP/pd.json" <<'PY' && ok || fail "P/D variant"
import json, sys, copy
p = json.load(open(sys.argv[1]))
g = p["groups"][0]
g["stages"][0].update({"tp": 8, "ep": 8, "dp_attention": 8})
g["stages"][0].pop("cross_node")
pl = g["replicas"][0]["placement"][0]
pre = dict(copy.deepcopy(g), name="pre", role="prefill", replicas=[{"id": "pre0", "placement": [pl[:8]]}])
dec = dict(copy.deepcopy(g), name="dec", role="decode", replicas=[{"id": "dec0", "placement": [pl[8:]]}])
p.update(mode="disagg", groups=[pre, dec])
p["routing"] = {"ingress": [{"group": "pre", "weight": 1}], "kv": [{"from": "pre0", "to": "dec0", "weight": 1}]}
json.dump(p, open(sys.argv[2], "w"))
PY
run check -p "$TMP/pd.json" -c $MIXED
expect_rc 0 "check the P/D EP plan"
run export -p "$TMP/pd.json" --to launch --engine sglang -o "$TMP/pd.jsonl"
expect_rc 0 "export --engine sglang P/D EP"
check_argv "$TMP/pd.jsonl" 0 "SGLang EP prefill" "+--moe-a2a-backend deepep --deepep-mode normal" \
	"+--disaggregation-mode prefill"
check_argv "$TMP/pd.jsonl" 1 "SGLang EP decode" "+--moe-a2a-backend deepep --deepep-mode low_latency" \
	"+--disaggregation-mode decode"
run export -p "$TMP/pd.json" --to launch -o "$TMP/pd-vllm.jsonl"
expect_rc 0 "export P/D EP for vLLM"
for n in 0 1; do
	check_argv "$TMP/pd-vllm.jsonl" $n "vLLM P/D EP" "+--tensor-parallel-size 1" "+--enable-expert-parallel" \
		"+--data-parallel-size 8" "+--kv-transfer-config"
done
# EP without attention ranks over two nodes: vLLM's multi-node TP (EP =
# TP 16), no data-parallel flags.
python3 - $TWO "$TMP/ep16.json" <<'PY' && ok || fail "ep-only variant"
import json, sys
p = json.load(open(sys.argv[1]))
del p["groups"][0]["stages"][0]["dp_attention"]
json.dump(p, open(sys.argv[2], "w"))
PY
run export -p "$TMP/ep16.json" --to launch -o "$TMP/ep16.jsonl"
expect_rc 0 "export ep 16 without DP attention"
check_argv "$TMP/ep16.jsonl" 1 "vLLM ep 16 worker" "+--tensor-parallel-size 16" "+--enable-expert-parallel" \
	"+--nnodes 2 --node-rank 1" "+--headless" "---data-parallel-size"
# An attention rank that would span nodes: 12 GPUs (8 + 4) in 3 ranks of
# TP 4, while vLLM starts 6 GPUs' whole ranks per node.
python3 - $TWO "$TMP/span.json" <<'PY' && ok || fail "span variant"
import json, sys
p = json.load(open(sys.argv[1]))
s = p["groups"][0]["stages"][0]
s.update({"tp": 12, "ep": 12, "dp_attention": 3, "redundant_experts": 4})
r = p["groups"][0]["replicas"][0]
r["placement"][0] = r["placement"][0][:12]
json.dump(p, open(sys.argv[2], "w"))
PY
run export -p "$TMP/span.json" --to launch --lossy
expect_rc 1 "export an attention rank over nodes"
expect_err_line '^hexplan: error: group g0: replica g0r0 runs 3 attention ranks of TP 4 over 2 nodes, and vLLM starts whole data-parallel ranks on each node \(--data-parallel-size-local\): an attention rank cannot span nodes$' "span message"
# A dense model's attention ranks are plain data parallelism: 4 ranks of
# TP 4 over 2 nodes for vLLM (no EP); SGLang runs --dp-size on one node.
python3 - tests/data/plans/mixed-baseline.json "$TMP/dense-dp.json" <<'PY' && ok || fail "dense DP variant"
import json, sys
p = json.load(open(sys.argv[1]))
g = p["groups"][0]
g["stages"][0].update({"tp": 16, "dp_attention": 4, "cross_node": True})
pl = ["h100-0:%d" % i for i in range(8)] + ["h100-1:%d" % i for i in range(8)]
g["replicas"] = [{"id": "g0r0", "placement": [pl], "tp_links": [{"bw_gbps": 100, "latency_ms": 0.02}]}]
p["groups"] = [g]
p["routing"] = {"ingress": [{"group": "g0", "weight": 1}]}
json.dump(p, open(sys.argv[2], "w"))
PY
run check -p "$TMP/dense-dp.json" -c $MIXED
expect_rc 0 "check dense DP over 2 nodes"
run export -p "$TMP/dense-dp.json" --to launch -o "$TMP/dense-dp.jsonl"
expect_rc 0 "export dense DP over 2 nodes"
check_argv "$TMP/dense-dp.jsonl" 1 "vLLM dense DP" "+--tensor-parallel-size 4" "+--data-parallel-size 4" \
	"+--data-parallel-size-local 2" "+--data-parallel-start-rank 2 --headless" "---enable-expert-parallel"
run export -p "$TMP/dense-dp.json" --to launch --engine sglang --lossy
expect_rc 1 "export --engine sglang dense DP over 2 nodes"
expect_err_line '^hexplan: error: group g0: replica g0r0 runs 4 data-parallel ranks of a dense model over 2 nodes, and SGLang runs --dp-size without expert parallelism on one node$' "SGLang dense DP message"
# Pipeline stages with EP: refused by every target.
python3 - $TWO "$TMP/pp.json" <<'PY' && ok || fail "pp variant"
import json, sys
p = json.load(open(sys.argv[1]))
g = p["groups"][0]
s = g["stages"][0]
s.update({"tp": 8, "ep": 8, "dp_attention": 8, "layers": [0, 24]})
s2 = dict(s, layers=[24, 48])
g["stages"] = [s, s2]
r = g["replicas"][0]
r["placement"] = [r["placement"][0][:8], r["placement"][0][8:]]
r["tp_links"] = r["tp_links"] * 2
r["links"] = [{"bw_gbps": 100, "latency_ms": 0.02}]
json.dump(p, open(sys.argv[2], "w"))
PY
run export -p "$TMP/pp.json" --to launch
expect_rc 1 "export EP over pipeline stages"
expect_err_line "^hexplan: error: $TMP/pp.json: group g0 is expert parallel \(ep 8, dp_attention 8\) over 2 pipeline stages: the exports write the engines' expert-parallel flags for a group of one stage only \(--to dot draws it\)\$" "pp message"

# Kubernetes: a single-node replica is one pod with vLLM's flags, valid
# manifests; llm-d's pods carry the same.  A multi-node replica with DP
# attention is a LeaderWorkerSet of vLLM's data-parallel ranks, one
# without is a LeaderWorkerSet running TP 16 with EP over Ray.
VALIDATE=../shared/tools/validate-k8s
have_validate=0
[ -x "$VALIDATE" ] && python3 -c 'import yaml, jsonschema' 2>/dev/null && have_validate=1
[ "$have_validate" = 1 ] || echo "SKIP: $VALIDATE or python3-jsonschema is missing: no schema checks"
# k8s_has FILE DESC WORDS...: the vllm container's command has WORDS in a row
k8s_has() {
	python3 - "$@" <<'PY'
import sys, yaml
f, want = sys.argv[1], sys.argv[3:]
for d in yaml.safe_load_all(open(f)):
    spec = (d or {}).get("spec", {})
    tpls = [spec.get("template"), spec.get("leaderWorkerTemplate", {}).get("leaderTemplate")]
    for t in tpls:
        for c in ((t or {}).get("spec") or {}).get("containers", []):
            words = c.get("command", []) + c.get("args", [])
            words = sum((w.split() if w.startswith("ray start") or " " in w and "vllm serve" in w else [w] for w in words), [])
            if any(words[i:i + len(want)] == want for i in range(len(words))):
                sys.exit(0)
sys.exit(1)
PY
}
for t in k8s llm-d; do
	f=$TMP/$t.yaml
	run export -p $ONE --to $t -o "$f"
	expect_rc 0 "export --to $t EP 8"
	if [ "$have_validate" = 1 ]; then
		"$VALIDATE" "$f" >"$TMP/val" 2>&1 && ok || {
			fail "$t EP: validate-k8s"
			head -5 "$TMP/val" >&2
		}
	fi
	for w in "--tensor-parallel-size 1" "--enable-expert-parallel" "--data-parallel-size 8"; do
		# shellcheck disable=SC2086
		k8s_has "$f" "$t" $w && ok || fail "$t EP: no $w"
	done
done
# EPLB's flags follow the release a pod runs: the NVIDIA image's (0.11.0,
# --eplb-config), the ROCm image's on AMD GPUs (0.10.1,
# --num-redundant-experts) unless --image names another.
python3 - "$TMP/dp2.json" "$TMP/amd.json" <<'PY' && ok || fail "AMD variant"
import json, sys
p = json.load(open(sys.argv[1]))
p["gpus"][0].update(vendor="amd", product="AMD_Instinct_MI300X_OAM")
json.dump(p, open(sys.argv[2], "w"))
PY
for spec in "$TMP/dp2.json||--eplb-config {\"num_redundant_experts\":8}" \
	"$TMP/amd.json||--num-redundant-experts 8" \
	"$TMP/amd.json|--image my/vllm:1|--eplb-config {\"num_redundant_experts\":8}"; do
	plan=${spec%%|*}
	rest=${spec#*|}
	img=${rest%%|*}
	want=${rest#*|}
	# shellcheck disable=SC2086
	run export -p "$plan" --to k8s ${img:+$img} -o "$TMP/eplb.yaml"
	expect_rc 0 "export --to k8s $plan $img"
	# shellcheck disable=SC2086
	k8s_has "$TMP/eplb.yaml" eplb --tensor-parallel-size 4 && ok || fail "k8s $plan: attention TP"
	# shellcheck disable=SC2086
	k8s_has "$TMP/eplb.yaml" eplb --enable-eplb $want && ok || fail "k8s $plan $img: no --enable-eplb $want"
done
# DP attention over 2 nodes: a LeaderWorkerSet without Ray, each pod
# starting its 8 ranks (tests/cli/ep_multinode.sh checks the flags).
run export -p $TWO --to k8s -o "$TMP/lws-dp.yaml"
expect_rc 0 "export --to k8s DP attention over 2 nodes"
grep -q 'kind: "*LeaderWorkerSet' "$TMP/lws-dp.yaml" && ok || fail "k8s DP over 2 nodes: no LeaderWorkerSet"
grep -q 'ray start' "$TMP/lws-dp.yaml" && fail "k8s DP over 2 nodes: the pods start Ray" || ok
# 12 GPUs (8 + 4) in 3 ranks of TP 4: the pods cannot start alike shares.
run export -p "$TMP/span.json" --to k8s --lossy
expect_rc 1 "export --to k8s ranks the pods cannot share alike"
expect_err_line "^hexplan: error: group \"g0\" runs 3 attention ranks of TP 4 over 2 nodes that do not each hold whole ranks alike: every pod of a LeaderWorkerSet starts the same number of vLLM's data-parallel ranks \(--data-parallel-size-local\)\$" "k8s uneven DP message"
run export -p "$TMP/ep16.json" --to k8s -o "$TMP/lws.yaml"
expect_rc 0 "export --to k8s ep 16 over 2 nodes"
if [ "$have_validate" = 1 ]; then
	"$VALIDATE" "$TMP/lws.yaml" >"$TMP/val" 2>&1 && ok || fail "k8s ep 16: validate-k8s"
fi
grep -q 'kind: "*LeaderWorkerSet' "$TMP/lws.yaml" && ok || fail "k8s ep 16: no LeaderWorkerSet"
grep -q -- '--tensor-parallel-size 16 --enable-expert-parallel' "$TMP/lws.yaml" && ok ||
	fail "k8s ep 16: the leader does not run TP 16 with EP"

# The targets that write no EP flags refuse, saying why.
for spec in 'kserve|the kserve export writes the LLMInferenceService'"'"'s tensor and pipeline parallelism only, not its data and expert fields' \
	'dynamo|the dynamo export'"'"'s worker arguments were checked against Dynamo'"'"'s tensor- and pipeline-parallel vLLM workers only'; do
	t=${spec%%|*}
	why=${spec#*|}
	run export -p $ONE --to $t --lossy
	expect_rc 1 "export --to $t an EP plan"
	printf 'hexplan: error: %s: group g0 stage 0 is expert parallel (ep 8, dp_attention 8): %s (--to launch, k8s or llm-d writes the engines'"'"' expert-parallel flags, --to dot draws it)\n' $ONE "$why" >"$TMP/want"
	cmp -s "$TMP/err" "$TMP/want" && ok || {
		fail "export $t refusal"
		diff "$TMP/want" "$TMP/err" | sed 's/^/  /' >&2
	}
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
