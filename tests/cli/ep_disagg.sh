#!/bin/sh
# plan --mode disagg considers one-node expert-parallel shapes for a
# mixture of experts, per role: the plan's stages carry ep and
# dp_attention, check passes them, the simulator ran them (the plan's
# simulated capacity), and a group's capacity is what estimate --ep
# --role says for its shape.  A prefill EP size may differ from the
# decode one.  Dense models get no EP keys.
. "$(dirname "$0")/../lib.sh"

CHAT=examples/workloads/chat.json

# nodes NAME GPU N: a cluster of N nodes of 8 GPUs of type GPU in $TMP/NAME.json
nodes() {
	python3 - "$TMP/$1.json" "$2" "$3" <<'PY'
import json, sys
json.dump({"version": 1, "nodes": [{"name": "n%d" % i, "gpu": sys.argv[2], "count": 8}
                                   for i in range(int(sys.argv[3]))]}, open(sys.argv[1], "w"))
PY
}

# shapes PLAN: "ROLE TP EP DP REPLICAS CAPACITY" per group, in plan order.
shapes() {
	python3 - "$1" <<'PY'
import json, sys
for g in json.load(open(sys.argv[1]))["groups"]:
    s = g["stages"][0]
    print(g["role"], s["tp"], s.get("ep", 0), s.get("dp_attention", 0), len(g["replicas"]),
          g["predicted"]["capacity_rps"])
PY
}

# est ROLE GPU MODEL ARGS...: estimate's capacity (req/s) for ROLE on chat.
est() {
	role=$1
	gpu=$2
	model=$3
	shift 3
	run estimate -m "$model" -g "$gpu" "$@" -w $CHAT --role "$role" --format json
	[ "$rc" -eq 0 ] || fail "estimate $* --role $role: exit $rc"
	jnum capacity.rps
}

# --- qwen3-30b-a3b on two H100 nodes: decode is EP 8 x 8 ---------------------
# A decode node's best: EP 8 with 8 attention ranks, 461.1 req/s by
# estimate, where the best TP split of the node carries far less (TP 1 x 8
# replicas, TP 2 x 4, ...).
nodes h2 h100-sxm 2
run plan -c "$TMP/h2.json" -w $CHAT -m qwen3-30b-a3b --mode disagg -o "$TMP/q.json"
expect_rc 0 "disagg qwen3-30b-a3b on 2 x 8 H100"
shapes "$TMP/q.json" >"$TMP/q.shapes"
grep -q '^decode 8 8 8 1 ' "$TMP/q.shapes" && ok ||
	fail "decode is not EP 8 x 8: $(tr '\n' ';' <"$TMP/q.shapes")"
run check -p "$TMP/q.json" -c "$TMP/h2.json" --format table
expect_rc 0 "check the disagg EP plan"
# (the prefill node's shape is whichever is best at the transfer reserve
# that wins: the KV link binds here, so several carry the same flow)
expect_out '^ok: 2 groups, [0-9]+ replicas, 16 of 16 GPUs' "check line"
python3 -c 'import json,sys; sys.exit(not json.load(open(sys.argv[1]))["simulated"]["capacity_rps"] > 0)' \
	"$TMP/q.json" && ok || fail "the simulator did not rate the EP plan"
got=$(awk '$1 == "decode" {print $6}' "$TMP/q.shapes")
want=$(est decode h100-sxm qwen3-30b-a3b --ep 8 --dp-attention)
[ "$got" = "$want" ] && ok || fail "decode EP capacity $got, estimate --ep 8 --dp-attention --role decode $want"
# EP is the better decode shape: the node's capacity over every TP.
for tp in 1 2 4 8; do
	tpcap=$(est decode h100-sxm qwen3-30b-a3b --tp $tp)
	python3 -c "import sys; sys.exit(not float('$want') > 8 / $tp * float('$tpcap'))" && ok ||
		fail "EP 8 decode $want req/s does not beat $((8 / tp)) x TP $tp at $tpcap"
done
run plan -p "$TMP/q.json" --format table
expect_out '^d[0-9]+ +decode +qwen3-30b-a3b h100-sxm x8 \[0,48\) ep8 dp8 ' "table shows the decode EP shape"
run plan -c "$TMP/h2.json" -w $CHAT -m qwen3-30b-a3b --mode disagg
cmp -s "$TMP/out" "$TMP/q.json" && ok || fail "disagg EP plan is not deterministic"

# --- mixtral-8x7b on four L40S nodes: prefill and decode EP 8 ----------------
# Prefill: one EP 8 x 8 replica a node (estimate 41.7 req/s: the prompts
# that arrive while an iteration runs share the next) beats two EP 4 x 4
# (19.5 each); decode: EP 8 x 8 (67.4 req/s; EP 4's KV is short).
nodes l4n l40s 4
run plan -c "$TMP/l4n.json" -w $CHAT -m mixtral-8x7b --mode disagg -o "$TMP/m.json"
expect_rc 0 "disagg mixtral-8x7b on 4 x 8 L40S"
shapes "$TMP/m.json" >"$TMP/m.shapes"
grep -q '^prefill 8 8 8 1 ' "$TMP/m.shapes" && grep -q '^decode 8 8 8 1 ' "$TMP/m.shapes" &&
	! grep -Eqv '^(prefill|decode) 8 8 8 1 ' "$TMP/m.shapes" && ok ||
	fail "not prefill and decode EP 8: $(tr '\n' ';' <"$TMP/m.shapes")"
run check -p "$TMP/m.json" -c "$TMP/l4n.json" --format table
expect_rc 0 "check the mixed-EP disagg plan"
expect_out '^ok: [0-9]+ groups, 4 replicas, 32 of 32 GPUs' "check line, EP 8 disagg"
got=$(awk '$1 == "decode" {print $6; exit}' "$TMP/m.shapes")
want=$(est decode l40s mixtral-8x7b --ep 8 --dp-attention)
[ "$got" = "$want" ] && ok || fail "decode EP 8 capacity $got, estimate $want"
# A prefill replica is priced at the TTFT SLO less the KV transfer: near
# estimate's figure at the whole SLO, and not above it by more than the
# rule's grain (the prompts an iteration carries grow with the rate, so
# the percentile TTFT is not monotone in it to within 0.1%).
got=$(awk '$1 == "prefill" {print $6; exit}' "$TMP/m.shapes")
want=$(est prefill l40s mixtral-8x7b --ep 8 --dp-attention)
python3 -c "import sys; g, w = float('$got'), float('$want'); sys.exit(not 0.95 * w <= g <= 1.001 * w)" && ok ||
	fail "prefill EP 8 capacity $got, estimate --role prefill $want"
ep4=$(est prefill l40s mixtral-8x7b --ep 4 --dp-attention)
python3 -c "import sys; sys.exit(not float('$want') > 2 * float('$ep4'))" && ok ||
	fail "one EP 8 prefill replica ($want) does not beat two EP 4 ($ep4 each)"

# --- estimate --role's errors (usage errors: the message, then the usage) -----
run estimate -m mixtral-8x7b -g l40s --ep 8 --dp-attention --role decode
expect_rc 2 "estimate --role without a workload"
head -1 "$TMP/err" | grep -q '^hexplan: error: --role needs -w workload.json' && ok || fail "--role without -w message"
run estimate -m mixtral-8x7b -g l40s -w $CHAT --role both
expect_rc 2 "estimate --role both"
head -1 "$TMP/err" | grep -q '^hexplan: error: --role must be aggregated, prefill or decode, not "both"$' && ok ||
	fail "--role value message"
run estimate -m qwen3-30b-a3b --afd h100-sxm:2:2,h100-sxm:2:2 --role decode
expect_rc 2 "estimate --afd --role"
head -1 "$TMP/err" | grep -q '^hexplan: error: --afd does not take --role: it has no -w$' && ok ||
	fail "--afd --role message"
# aggregated is the default
run estimate -m mixtral-8x7b -g l40s --ep 8 --dp-attention -w $CHAT --format json
a=$(jnum capacity.rps)
b=$(est aggregated l40s mixtral-8x7b --ep 8 --dp-attention)
[ "$a" = "$b" ] && ok || fail "--role aggregated $b differs from the default $a"

# --- a dense model: no EP keys ------------------------------------------------
run plan -c "$TMP/h2.json" -w $CHAT -m llama-3.1-8b --mode disagg
expect_rc 0 "disagg llama-3.1-8b"
grep -Eq '"(ep|dp_attention)"' "$TMP/out" && fail "EP keys on a dense model's disagg plan" || ok

finish
