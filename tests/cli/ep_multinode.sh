#!/bin/sh
# Expert parallelism over several nodes: DeepSeek-V3 (FP8, 256 experts)
# does not fit one 8-GPU H100 node, so on 4 such nodes with a 400 Gb/s NIC
# per GPU (3,200 Gb/s a node) colocated plans two replicas of EP 16 over 2
# nodes each, with 8 attention ranks of TP 2 (the simulator rates them at
# 74 req/s; with 16 ranks of one GPU at 15, as a prompt is one rank's and
# its chunk stalls the other ranks' decodes) and disagg prefill and decode
# EP 16 over 2 nodes each;
# check passes them, the simulator runs them, the replica is priced as
# 'estimate --ep' prices the shape (on 3 nodes, EP 24 with 8 redundant
# experts), and the exports of EP 32 over the 4
# nodes (the colocated plan's two replicas made one) write each node's
# share of the ranks
# (launch for vLLM and SGLang, k8s and llm-d LeaderWorkerSets that
# validate), with vLLM's DeepEP all-to-all by role and release.  check refuses a multi-node EP stage without its NIC, with
# one faster than the nodes', and one that does not divide the experts
# without redundancy.
. "$(dirname "$0")/../lib.sh"

EP=tests/data/ep
IB=tests/data/ep-multinode/h100x4-ib.json
W=tests/data/ep-multinode/deepseek-v3-2k.json

# stage_is FILE GROUP TP EP DP: group GROUP's stage, cross_node, and every
# replica on TP / 8 whole nodes with a tp_links entry at the nodes' NIC.
stage_is() {
	python3 - "$@" <<'PY'
import json, sys
f, gi, tp, ep, dp = sys.argv[1], int(sys.argv[2]), *map(int, sys.argv[3:])
g = json.load(open(f))["groups"][gi]
s = g["stages"][0]
# DP 0: any attention ranks, more than one, that divide TP
if dp == 0 and 1 < s.get("dp_attention", 1) and tp % s["dp_attention"] == 0:
    dp = s["dp_attention"]
assert (s["tp"], s.get("ep"), s.get("dp_attention"), s.get("cross_node")) == (tp, ep, dp, True), s
for r in g["replicas"]:
    nodes = {}
    for ref in r["placement"][0]:
        n, i = ref.split(":")
        nodes.setdefault(n, []).append(int(i))
    assert len(nodes) == tp // 8 and all(sorted(v) == list(range(8)) for v in nodes.values()), nodes
    assert r["tp_links"][0]["bw_gbps"] == 3200, r
PY
}

# --- colocated --------------------------------------------------------------
run plan -c $IB -w $W -m deepseek-v3 --mode colocated -o "$TMP/col.json"
expect_rc 0 "colocated deepseek-v3 on 4 nodes"
stage_is "$TMP/col.json" 0 16 16 8 && ok || fail "colocated: not EP 16 (8 ranks) over 2 nodes: $(head -c 400 "$TMP/col.json")"
run check -p "$TMP/col.json" -c $IB --format table
expect_rc 0 "check the colocated multi-node EP plan"
expect_out "ok: 1 groups, 2 replicas, 32 of 32 GPUs" "check line"
# Its capacity is estimate's for the shape (the NIC from tp_links).
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["groups"][0]["predicted"]["capacity_rps"])' "$TMP/col.json" >"$TMP/got"
run estimate -m deepseek-v3 -g h100-sxm --ep 16 --dp-attention --dp 8 --nic-gbps 3200 -w $W --format json
expect_rc 0 "estimate EP 16"
[ "$(cat "$TMP/got")" = "$(jnum capacity.rps)" ] && ok ||
	fail "colocated EP 16 capacity $(cat "$TMP/got"), estimate $(jnum capacity.rps)"
# More than the pipelines of TP 8 that were its only shapes before.
run estimate -m deepseek-v3 -g h100-sxm --tp 8 --pp 2 --nic-gbps 3200 -w $W --format json
python3 -c "import sys; sys.exit(not float('$(cat "$TMP/got")') > 2 * float('$(jnum capacity.rps)'))" && ok ||
	fail "EP 16 ($(cat "$TMP/got") req/s) is not above twice TP 8 x PP 2's"
run simulate -p "$TMP/col.json" -w $W --requests 300
expect_rc 0 "simulate the colocated multi-node EP plan"
[ "$(jnum requests.finished)" = 300 ] && ok || fail "simulate: $(jnum requests.finished) of 300 finished"
# On 3 of the nodes colocated plans EP 24 over all 3 with the 8 redundant
# experts that make 24 divide 256 + 8 (not EP 16 over 2, the third node
# idle); check passes it, its capacity is estimate's for the shape, above
# EP 16's, and the launch exports enable EPLB with the 8.
IB3=tests/data/ep-multinode/h100x3-ib.json
run plan -c $IB3 -w $W -m deepseek-v3 --mode colocated -o "$TMP/col3.json"
expect_rc 0 "colocated deepseek-v3 on 3 nodes"
python3 - "$TMP/col3.json" <<'PY' && ok || fail "colocated on 3 nodes: not EP 24 with 8 redundant experts: $(head -c 400 "$TMP/col3.json")"
import json, sys
g = json.load(open(sys.argv[1]))["groups"]
assert len(g) == 1 and len(g[0]["replicas"]) == 1, g
s = g[0]["stages"][0]
assert (s["tp"], s["ep"], s.get("redundant_experts"), s.get("cross_node")) == (24, 24, 8, True), s
PY
run check -p "$TMP/col3.json" -c $IB3 --format table
expect_rc 0 "check EP 24 with redundant experts"
expect_out "ok: 1 groups, 1 replicas, 24 of 24 GPUs" "check line EP 24"
python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["groups"][0]; print(g["predicted"]["capacity_rps"], g["stages"][0]["dp_attention"])' "$TMP/col3.json" >"$TMP/got3"
run estimate -m deepseek-v3 -g h100-sxm --ep 24 --redundant-experts 8 --dp-attention --dp "$(cut -d' ' -f2 "$TMP/got3")" --nic-gbps 3200 -w $W --format json
expect_rc 0 "estimate EP 24"
[ "$(cut -d' ' -f1 "$TMP/got3")" = "$(jnum capacity.rps)" ] && ok ||
	fail "colocated EP 24 capacity $(cat "$TMP/got3"), estimate $(jnum capacity.rps)"
[ "$(cut -d' ' -f1 "$TMP/got3")" != "$(cat "$TMP/got")" ] && python3 -c "import sys; sys.exit(not float('$(cut -d' ' -f1 "$TMP/got3")') > float('$(cat "$TMP/got")'))" && ok ||
	fail "EP 24 ($(cat "$TMP/got3")) is not above one EP 16 replica ($(cat "$TMP/got"))"
run export -p "$TMP/col3.json" --to launch --engine vllm
expect_rc 0 "export EP 24 to vLLM"
expect_out '"--eplb-config", "{\\"num_redundant_experts\\":8}"' "vLLM EPLB with 8 redundant experts"
run export -p "$TMP/col3.json" --to launch --engine sglang
expect_rc 0 "export EP 24 to SGLang"
expect_out '"--ep-num-redundant-experts", "8"' "SGLang's redundant experts"

# EP 32 over the 4 nodes: the two replicas made one, for check and the
# exports below.
python3 - "$TMP/col.json" "$TMP/ep32.json" <<'PY' && ok || fail "EP 32 variant"
import json, sys
p = json.load(open(sys.argv[1]))
g = p["groups"][0]
g["stages"][0].update(tp=32, ep=32, dp_attention=32)
g["replicas"][0]["placement"][0] += g["replicas"][1]["placement"][0]
del g["replicas"][1:]
json.dump(p, open(sys.argv[2], "w"))
PY
stage_is "$TMP/ep32.json" 0 32 32 32 && ok || fail "EP 32 variant: not EP 32 over 4 nodes"
run check -p "$TMP/ep32.json" -c $IB --format table
expect_rc 0 "check EP 32 over 4 nodes"
expect_out "ok: 1 groups, 1 replicas, 32 of 32 GPUs" "check line EP 32"
run simulate -p "$TMP/ep32.json" -w $W --requests 300
expect_rc 0 "simulate EP 32 over 4 nodes"
[ "$(jnum requests.finished)" = 300 ] && ok || fail "simulate EP 32: $(jnum requests.finished) of 300 finished"

# --- disagg -----------------------------------------------------------------
run plan -c $IB -w $W -m deepseek-v3 --mode disagg -o "$TMP/dis.json"
expect_rc 0 "disagg deepseek-v3 on 4 nodes"
python3 - "$TMP/dis.json" <<'PY' && ok || fail "disagg: not one prefill and one decode EP replica"
import json, sys
g = json.load(open(sys.argv[1]))["groups"]
assert sorted(x["role"] for x in g) == ["decode", "prefill"], g
assert all(len(x["replicas"]) == 1 for x in g), g
PY
# The prefill side's ranks are the rule's call (DP 8 and 16 simulate within
# 2% of each other there); the decode side takes all 16.
stage_is "$TMP/dis.json" 0 16 16 0 && ok || fail "disagg prefill: not EP 16 over 2 nodes with DP attention"
stage_is "$TMP/dis.json" 1 16 16 16 && ok || fail "disagg decode: not EP 16 over 2 nodes with 16 ranks"
run check -p "$TMP/dis.json" -c $IB --format table
expect_rc 0 "check the disagg multi-node EP plan"
run simulate -p "$TMP/dis.json" -w $W --requests 300
expect_rc 0 "simulate the disagg multi-node EP plan"
[ "$(jnum requests.finished)" = 300 ] && ok || fail "simulate disagg: $(jnum requests.finished) of 300 finished"

# --- check: the NIC and the experts -----------------------------------------
# NAME|CHANGE (python on plan p, stage s, replica r)|CLUSTER|EXPECTED LINE
cat >"$TMP/cases" <<'EOF2'
no-nic|del r["tp_links"]|/groups/0/replicas/0: stage 0 is expert parallel over 4 nodes but the replica has no tp_links entry for it: the NIC its all-to-all crosses
fast-nic|r["tp_links"][0]["bw_gbps"] = 6400|/groups/0/replicas/0/tp_links/0/bw_gbps: 6400 Gb/s for the all-to-all of an expert-parallel stage, above node "h100-0"'s NIC of 3200 Gb/s
experts|s.update(tp=24, ep=24, dp_attention=24); r["placement"][0] = r["placement"][0][:24]|/groups/0/stages/0/ep: ep 24 does not divide the 256 experts of deepseek-v3
EOF2
while IFS='|' read -r name change line; do
	python3 - "$TMP/ep32.json" "$TMP/$name.json" "$change" <<'PY' || fail "$name: variant"
import json, sys
p = json.load(open(sys.argv[1]))
s = p["groups"][0]["stages"][0]
r = p["groups"][0]["replicas"][0]
exec(sys.argv[3])
json.dump(p, open(sys.argv[2], "w"))
PY
	run check -p "$TMP/$name.json" -c $IB
	expect_rc 1 "check $name"
	expect_err_exact "$TMP/$name.json" "$line" "check $name"
done <"$TMP/cases"
# EP 24 over 3 nodes holds the 256 experts with 8 redundant ones.
python3 - "$TMP/experts.json" "$TMP/red.json" <<'PY' && ok || fail "redundant variant"
import json, sys
p = json.load(open(sys.argv[1]))
p["groups"][0]["stages"][0]["redundant_experts"] = 8
json.dump(p, open(sys.argv[2], "w"))
PY
run check -p "$TMP/red.json" -c $IB --format table
expect_rc 0 "check EP 24 over 3 nodes with 8 redundant experts"

# --- exports ----------------------------------------------------------------
# argv_has FILE PROC WORDS...: process PROC of the JSON lines has WORDS in a
# row.
argv_has() {
	python3 - "$@" <<'PY'
import json, sys
procs = [json.loads(l) for l in open(sys.argv[1]) if '"argv"' in l and '"router"' not in l]
a, want = procs[int(sys.argv[2])]["argv"], sys.argv[3:]
sys.exit(not any(a[i:i + len(want)] == want for i in range(len(a))))
PY
}
run export -p "$TMP/ep32.json" --to launch -o "$TMP/col.jsonl"
expect_rc 0 "export --to launch EP 32 over 4 nodes"
[ "$(grep -c '"argv"' "$TMP/col.jsonl")" = 5 ] && ok || fail "EP 32: not 4 processes and a router"
for n in 0 1 2 3; do
	for w in "--tensor-parallel-size 1" "--enable-expert-parallel" "--data-parallel-size 32" \
		"--data-parallel-size-local 8" "--data-parallel-address h100-0"; do
		# shellcheck disable=SC2086
		argv_has "$TMP/col.jsonl" $n $w && ok || fail "vLLM node $n: no $w"
	done
done
argv_has "$TMP/col.jsonl" 3 --data-parallel-start-rank 24 --headless && ok || fail "vLLM node 3: not headless from rank 24"
# DeepEP's all-to-all over the nodes: high-throughput kernels on an
# aggregated group, low-latency on a decode one (flag from vLLM 0.11.1,
# the environment variable before); on one node the release's default.
argv_has "$TMP/col.jsonl" 0 --all2all-backend deepep_high_throughput && ok || fail "vLLM: no DeepEP high-throughput all-to-all"
# The cost model's two micro-batches: vLLM's dual batch overlap with
# DeepEP and DP over 1 (from 0.11.1), SGLang's two-batch overlap.
argv_has "$TMP/col.jsonl" 0 --enable-dbo && ok || fail "vLLM 0.11.1: no --enable-dbo"
run export -p "$TMP/dis.json" --to launch -o "$TMP/dis.jsonl"
expect_rc 0 "export --to launch the disagg plan"
python3 - "$TMP/dis.jsonl" <<'PY' && ok || fail "disagg: DeepEP's kernels by role"
import json, sys
procs = [json.loads(l) for l in open(sys.argv[1]) if '"argv"' in l and '"router"' not in l]
want = {"prefill": "deepep_high_throughput", "decode": "deepep_low_latency"}
roles = {g: ("prefill" if g.startswith("p") else "decode") for g in {p["group"] for p in procs}}
assert len(procs) == 4, len(procs)
for p in procs:
    a = p["argv"]
    i = a.index("--all2all-backend")
    assert a[i + 1] == want[roles[p["group"]]], (p["group"], a[i + 1])
PY
run export -p "$TMP/ep32.json" --to launch --engine-version 0.11.0 -o "$TMP/col-old.jsonl"
expect_rc 0 "export --to launch for vLLM 0.11.0"
python3 - "$TMP/col-old.jsonl" <<'PY' && ok || fail "vLLM 0.11.0: not VLLM_ALL2ALL_BACKEND"
import json, sys
procs = [json.loads(l) for l in open(sys.argv[1]) if '"argv"' in l and '"router"' not in l]
for p in procs:
    assert "--all2all-backend" not in p["argv"], p["argv"]
    assert "--enable-dbo" not in p["argv"], p["argv"]
    assert p["env"]["VLLM_ALL2ALL_BACKEND"] == "deepep_high_throughput", p["env"]
PY
run export -p $EP/qwen3-30b-a3b-ep8.json --to launch
grep -q all2all "$TMP/out" && fail "one-node EP: an all-to-all backend written" || ok
run export -p "$TMP/ep32.json" --to launch --engine sglang -o "$TMP/col-sg.jsonl"
expect_rc 0 "export --to launch --engine sglang EP 32 over 4 nodes"
for n in 0 1 2 3; do
	argv_has "$TMP/col-sg.jsonl" $n --tp-size 32 && ok || fail "SGLang node $n: --tp-size 32"
	argv_has "$TMP/col-sg.jsonl" $n --ep-size 32 --dp-size 32 && ok || fail "SGLang node $n: --ep-size, --dp-size"
	argv_has "$TMP/col-sg.jsonl" $n --nnodes 4 --node-rank $n && ok || fail "SGLang node $n: --nnodes 4 --node-rank $n"
	argv_has "$TMP/col-sg.jsonl" $n --dist-init-addr h100-0:29500 && ok || fail "SGLang node $n: --dist-init-addr"
	argv_has "$TMP/col-sg.jsonl" $n --enable-dp-attention && ok || fail "SGLang node $n: --enable-dp-attention"
	argv_has "$TMP/col-sg.jsonl" $n --enable-two-batch-overlap && ok || fail "SGLang node $n: --enable-two-batch-overlap"
done
# Kubernetes: a LeaderWorkerSet of 4 pods, each vLLM with its 8 ranks.
VALIDATE=../shared/tools/validate-k8s
have_validate=0
[ -x "$VALIDATE" ] && python3 -c 'import yaml, jsonschema' 2>/dev/null && have_validate=1
[ "$have_validate" = 1 ] || echo "SKIP: $VALIDATE or python3-jsonschema is missing: no schema checks"
for t in k8s llm-d; do
	run export -p "$TMP/ep32.json" --to $t -o "$TMP/$t.yaml"
	expect_rc 0 "export --to $t EP 32 over 4 nodes"
	if [ "$have_validate" = 1 ]; then
		"$VALIDATE" "$TMP/$t.yaml" >"$TMP/val" 2>&1 && ok || {
			fail "$t: validate-k8s"
			head -5 "$TMP/val" >&2
		}
	fi
	python3 - "$TMP/$t.yaml" <<'PY' && ok || fail "$t: the LeaderWorkerSet's pods"
import sys, yaml
lws = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "LeaderWorkerSet"]
assert len(lws) == 1, lws
t = lws[0]["spec"]["leaderWorkerTemplate"]
assert t["size"] == 4, t["size"]
lead = " ".join(t["leaderTemplate"]["spec"]["containers"][0]["command"])
work = " ".join(t["workerTemplate"]["spec"]["containers"][0]["command"])
for c in (lead, work):
    for w in ("--tensor-parallel-size 1", "--enable-expert-parallel", "--data-parallel-size 32",
              "--data-parallel-size-local 8", '--data-parallel-address "$$LWS_LEADER_ADDRESS"',
              "--data-parallel-rpc-port 29500"):
        assert w in c, (w, c)
    assert "ray start" not in c, c
assert "--port 8000" in lead and "--headless" not in lead, lead
assert '--data-parallel-start-rank "$$((LWS_WORKER_INDEX * 8))" --headless' in work, work
assert "--port" not in work, work
# the image's vLLM (0.11.0) takes the all-to-all by environment
for p in (t["leaderTemplate"], t["workerTemplate"]):
    env = {e["name"]: e.get("value") for e in p["spec"]["containers"][0]["env"]}
    assert env.get("VLLM_ALL2ALL_BACKEND") == "deepep_high_throughput", env
PY
done
run export -p "$TMP/ep32.json" --to k8s --engine-version 0.11.1 -o "$TMP/k8s-new.yaml"
expect_rc 0 "export --to k8s for vLLM 0.11.1"
grep -q -- '--all2all-backend deepep_high_throughput' "$TMP/k8s-new.yaml" && ok || fail "k8s vLLM 0.11.1: no --all2all-backend"
grep -q -- '--enable-dbo' "$TMP/k8s-new.yaml" && ok || fail "k8s vLLM 0.11.1: no --enable-dbo"
grep -q -- '--enable-dbo' "$TMP/k8s.yaml" && fail "k8s vLLM 0.11.0: --enable-dbo written" || ok
grep -q VLLM_ALL2ALL_BACKEND "$TMP/k8s-new.yaml" && fail "k8s vLLM 0.11.1: the environment variable too" || ok

finish
