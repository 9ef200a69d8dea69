#!/bin/sh
# AFD decode groups in plans (issue 22): the "afd" keys read, written back
# byte for byte and checked (memory per side, the link against the
# predicted step, GPUs), with the exchange volumes worked out by hand;
# broken plans fail at their JSON pointer.
. "$(dirname "$0")/../lib.sh"

PLAN=tests/data/afd/llama-8b-afd.json
CL=examples/clusters/mixed.json

# variant PYTHON: $TMP/v.json is $PLAN after PYTHON edits the dict p.
variant() {
	python3 - "$PLAN" "$TMP/v.json" "$1" <<'EOF' || fail "variant: $1"
import json, sys
p = json.load(open(sys.argv[1]))
g = p["groups"][1]
r = g["replicas"][0]
exec(sys.argv[3])
json.dump(p, open(sys.argv[2], "w"), indent=2)
EOF
}
# err_has RE WHAT: some stderr line matches RE.
err_has() {
	if grep -Eq -- "$1" "$TMP/err"; then ok; else fail "$2: stderr does not match /$1/"; fi
}

# ---- the plan: llama-3.1-8b, prefill on one H100, one AFD decode replica --
# of 2 attention H100s (TP 1) and 1 FFN L40S (TP 1), m = 2, sized for
# B = 64 sequences at mean context 1088 (input 1024, output 128), step_ms
# estimate --afd's 35.7257 (tests/cli/afd_estimate.sh computes it by hand).
run check -p "$PLAN" -c "$CL"
expect_rc 0 "the AFD plan passes check"
expect_out '"gpus_used": 4' "the FFN GPU is counted (1 prefill, 2 attention, 1 FFN)"

# Written back: the same plan, byte for byte when written again.
run plan -p "$PLAN"
expect_rc 0 "plan -p reads the AFD plan"
cp "$TMP/out" "$TMP/a.json"
run plan -p "$TMP/a.json"
if cmp -s "$TMP/out" "$TMP/a.json"; then ok; else fail "AFD plan round trip is not byte-stable"; fi
python3 - "$TMP/a.json" <<'EOF' || fail "the afd keys written back"
import json, sys
p = json.load(open(sys.argv[1]))
g = p["groups"][1]
assert g["afd"] == {"attention_instances": 2, "ffn": {"gpu": "l40s", "instances": 1, "tp": 1},
                    "micro_batches": 2, "batch": 64, "context": 1088, "step_ms": 35.7257}, g["afd"]
r = g["replicas"][0]
assert r["placement"] == [["h100-0:1", "h100-0:2"]], r
assert r["afd"] == {"ffn": ["l40s-0:0"], "link": {"bw_gbps": 100, "latency_ms": 0.02}}, r
assert "afd" not in p["groups"][0] and "afd" not in p["groups"][0]["replicas"][0]
EOF

# The table shows both sides: attention instances, then the FFN side's
# GPU x TP x instances and the micro-batches.
run plan -p "$PLAN" --format table
expect_out '^g1 +decode +llama-3.1-8b h100-sxm x1 \[0,32\) x2 \+ l40s x1 x1 ffn m2 +1 ' "table's AFD group"
expect_out '^plan disagg: 2 groups, 2 replicas on 4 GPUs' "table's GPUs count the FFN side"
expect_out '^g0 +prefill +llama-3.1-8b h100-sxm x1 \[0,32\) +1 ' "table's plain group as before"

# The plan schema takes the AFD plan and refuses an afd key it lacks.
if python3 -c 'from jsonschema import Draft202012Validator' 2>/dev/null; then
	if python3 - profiles/plan.schema.json "$TMP/a.json" <<'EOF'; then ok; else fail "schema and the AFD plan"; fi
import json, sys
from jsonschema import Draft202012Validator
v = Draft202012Validator(json.load(open(sys.argv[1])))
p = json.load(open(sys.argv[2]))
assert not list(v.iter_errors(p)), [e.message for e in v.iter_errors(p)]
p["groups"][1]["afd"]["ratio"] = 2
assert list(v.iter_errors(p))
del p["groups"][1]["afd"]["ratio"]
p["groups"][1]["replicas"][0]["afd"]["ffn"] = []
assert list(v.iter_errors(p))
EOF
fi

# ---- the link --------------------------------------------------------------
# Per layer each way the batch's hidden states: B * h * 2 = 64 * 4096 * 2
# = 524,288 bytes; one micro-batch of 32 sequences, the busier end is the
# one FFN instance receiving all 32: 32 * 8192 = 262,144 bytes.  A step:
# 32 layers * 2 micro-batches * 262,144 = 16,777,216 bytes each way.  At
# 1 Gb/s (0.125e9 B/s) that is 134.218 ms, more than the 35.7257 ms step;
# at 100 Gb/s 1.342 ms.  The break-even: 16,777,216 B / 35.7257 ms = 3.757
# Gb/s.
python3 -c 'b = 32 * 2 * 32 * 4096 * 2; print(b, "%.3f" % (b / 0.125e9 * 1e3))' >"$TMP/want"
[ "$(cat "$TMP/want")" = "16777216 134.218" ] && ok || fail "hand computation: $(cat "$TMP/want")"
variant 'r["afd"]["link"]["bw_gbps"] = 1'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "a 1 Gb/s link is rejected"
err_has '/groups/1/replicas/0/afd/link: cannot carry the activations at the predicted step: 16777216 bytes a step each way at the busier end take 134\.218 ms at 1 Gb/s, more than step_ms 35\.7257' "link message"
err_has '/groups/1/replicas/0/afd/link: the cost model.s step over this link is [0-9.]+ ms, slower than the group.s step_ms 35\.7257' "step on a slow link"
# 4 Gb/s carries the bytes (4.194 ms < 35.7 ms of link time... at the
# busier end 16,777,216 / 0.5e9 = 33.554 ms), but the exchange in the
# pipeline then makes the step slower than the plan says.
variant 'r["afd"]["link"]["bw_gbps"] = 4'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "a 4 Gb/s link: the step is slower than predicted"
if grep -q 'cannot carry' "$TMP/err"; then fail "4 Gb/s carries 33.554 ms of bytes in 35.7 ms"; else ok; fi
err_has 'slower than the group.s step_ms' "4 Gb/s step"
# The link may not be faster than the cluster's between the two sides'
# nodes (mixed.json: 100 Gb/s NICs, 0.02 ms in the region).
variant 'r["afd"]["link"] = {"bw_gbps": 400, "latency_ms": 0.01}'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "a link faster than the cluster's"
err_has '/groups/1/replicas/0/afd/link: claims 400 Gb/s and 0\.01 ms between nodes "h100-0" and "l40s-0", whose link in the cluster is 100 Gb/s \(NICs included\) and 0\.02 ms' "cluster link"
# A plan promising a faster step than its GPUs allow fails the same way.
variant 'g["afd"]["step_ms"] = 30'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "a step faster than the cost model's"
err_has 'the cost model.s step over this link is 35\.726 ms, slower than the group.s step_ms 30' "fast step"

# ---- memory ------------------------------------------------------------------
# An H100 attention instance (TP 1): 79.6 GiB * 0.9 = 71.64 GiB, less the
# weights (attention 32 * (4096*6144 + 4096*4096) * 2 B, norms, embedding
# and head 2 * 128256 * 4096 * 2 B: 4.45752 GiB) and the 2 GiB reserve:
# 65.1825 GiB of KV; a token's KV is 32 layers * 8 heads * 128 * 2 * 2 B
# = 131,072 B, so floor(65.18248 GiB / 131072) = 533,974 tokens, 1,067,948
# for the two.  B = 1000 at context 1100 needs 1,100,000: rejected; 970 at
# 1100 (1,067,000) fits.
variant 'g["afd"]["batch"] = 1000; g["afd"]["context"] = 1100; g["afd"]["step_ms"] = 1000'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "the attention side cannot hold the KV cache"
err_has '/groups/1/replicas/0/placement/0: the 2 attention instances on h100-sxm GPUs hold the KV of 1067948 tokens .*the batch of 1000 sequences at context 1100 needs 1100000' "KV message"
variant 'g["afd"]["batch"] = 970; g["afd"]["context"] = 1100; g["afd"]["step_ms"] = 1000'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 0 "970 sequences at context 1100 fit"
# The FFN side: a 70B model's MLPs (about 105 GiB at BF16) on one L40S.
variant '
import copy
m = json.load(open("tests/data/plans/mixed-disagg.json"))["models"][0]
m = copy.deepcopy(m); m["name"] = "big"
m["arch"].update(layers=80, hidden=8192, heads=64, kv_heads=8, intermediate=28672)
p["models"].append(m)
for x in p["groups"]:
    x["model"] = "big"; x["stages"][0]["layers"] = [0, 80]
g["afd"]["batch"] = 8; g["afd"]["step_ms"] = 1e6'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "FFN weights beyond the L40S"
err_has '/groups/1/replicas/0/afd/ffn: the FFN weights do not fit on the l40s GPUs' "FFN memory"

# ---- a mixture of experts: qwen3-30b-a3b, 4 FFN (expert) instances ---------------
# 2 attention H100s (TP 1) and 4 L40S expert instances of 32 of the 128
# experts each, m = 2, B = 64 at context 1088; estimate --afd's step 39.4135
# ms.  Per MoE layer each way every token goes to its k = 8 experts: B * h
# * 2 * k = 64 * 2048 * 2 * 8 = 2,097,152 bytes.  One micro-batch of 32:
# an attention instance sends 16 * 4096 * 8 = 524,288 bytes, an expert
# instance receives a quarter of 32 * 4096 * 8, 262,144: the busier end is
# the attention side.  A step, 48 layers * 2 micro-batches * 524,288 =
# 50,331,648 bytes each way: 4.027 ms at 100 Gb/s, 40.265 ms at 10 Gb/s,
# more than the step.
moe='
m = json.load(open("tests/data/ep/qwen3-30b-a3b-ep8.json"))["models"][0]
p["models"] = [m]
for x in p["groups"]:
    x["model"] = m["name"]; x["stages"][0]["layers"] = [0, 48]
g["afd"]["ffn"]["instances"] = 4; g["afd"]["step_ms"] = 39.4135
r["afd"]["ffn"] = ["l40s-0:0", "l40s-0:1", "l40s-0:2", "l40s-0:3"]
'
variant "$moe"
cp "$TMP/v.json" "$TMP/moe.json"
run check -p "$TMP/moe.json" -c "$CL"
expect_rc 0 "the MoE AFD plan passes check"
expect_out '"gpus_used": 7' "the MoE plan's 4 expert GPUs counted"
variant "$moe"'
r["afd"]["link"]["bw_gbps"] = 10'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "a 10 Gb/s link under the MoE exchange"
err_has 'afd/link: cannot carry the activations at the predicted step: 50331648 bytes a step each way at the busier end take 40\.265 ms at 10 Gb/s, more than step_ms 39\.4135' "MoE link message"
variant "$moe"'
g["afd"]["ffn"]["instances"] = 3; r["afd"]["ffn"] = r["afd"]["ffn"][:3]'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "3 expert instances for 128 experts"
err_has '/groups/1/afd: 3 FFN instances must divide the 128 experts of qwen3-30b-a3b' "experts"
# The simulator's MoE step: at 8 req/s the mean TPOT is estimate's step at
# the batch simulate reports, within 5%.
python3 - "$HEXPLAN" "$TMP/moe.json" >"$TMP/moe-sim" 2>&1 <<'EOF' || fail "MoE AFD simulate: $(cat "$TMP/moe-sim")"
import json, math, subprocess, sys
hx, plan = sys.argv[1], sys.argv[2]
o = json.loads(subprocess.check_output([hx, "simulate", "-p", plan, "-w",
    "examples/workloads/chat.json", "--rate", "8", "--requests", "2000", "--format", "json"]))
g = o["groups"][1]
B, C = g["decode_batch"], round(g["decode_context"])
def step(b):
    e = json.loads(subprocess.check_output([hx, "estimate", "-m", "qwen3-30b-a3b", "--afd",
        "h100-sxm:2:1,l40s:4:1", "--batch", str(b), "--input", str(C - 1), "--output", "2",
        "--format", "json"]))
    return e["decode"]["step_ms"]
lo = max(1, math.floor(B))
want = step(lo) + (B - lo) * (step(lo + 1) - step(lo))
got = o["tpot_ms"]["mean"]
print("batch %.1f: mean TPOT %.3f ms, step %.3f ms" % (B, got, want))
assert g["finished"] == 2000 and abs(got / want - 1) <= 0.05
EOF
[ -s "$TMP/moe-sim" ] && ok

# ---- GPUs --------------------------------------------------------------------
variant 'r["afd"]["ffn"] = ["h100-0:1"]'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "FFN GPU used twice"
err_has '/groups/1/replicas/0/afd/ffn/0: GPU "h100-0:1" is already used at /groups/1/replicas/0/placement/0/0' "gpu twice"
err_has '/groups/1/replicas/0/afd/ffn/0: node "h100-0" has h100-sxm GPUs, not the FFN side.s l40s' "ffn type"
variant 'r["afd"]["ffn"] = ["l40s-9:0"]'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "unknown FFN node"
err_has '/groups/1/replicas/0/afd/ffn/0: GPU "l40s-9:0": the cluster has no node "l40s-9"' "unknown node"
variant 'r["afd"]["ffn"] = ["l40s-0:0", "l40s-0:1"]'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "FFN GPU count"
err_has '/groups/1/replicas/0/afd/ffn: has 2 GPUs, the 1 FFN instances of tp 1 take 1' "ffn count"
variant 'r["placement"] = [["h100-0:1"]]'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "attention GPU count"
err_has '/groups/1/replicas/0/placement/0: has 1 GPUs, the 2 attention instances of tp 1 take 2' "attention count"
variant 'g["afd"]["ffn"]["tp"] = 2; r["afd"]["ffn"] = ["l40s-0:0", "l40s-1:0"]'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "an FFN instance over two nodes"
err_has '/groups/1/replicas/0/afd/ffn/1: FFN instance 0 spans nodes "l40s-0" and "l40s-1"' "ffn spans"
variant 'g["role"] = "aggregated"; p["routing"]["kv"] = []; p["routing"]["ingress"] = [{"group": "g1", "weight": 1.0}]; del p["groups"][0]'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "an aggregated AFD group"
err_has '/groups/0/role: an AFD group decodes: its role must be decode, not aggregated' "role"
variant 'g["afd"]["ffn"]["tp"] = 3; r["afd"]["ffn"] = ["l40s-0:0", "l40s-0:1", "l40s-0:2"]'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "FFN tp not dividing the intermediate size"
err_has '/groups/1/afd: FFN tensor parallel degree 3 must divide the intermediate size 14336' "ffn tp"
variant 'g["afd"]["ffn"]["gpu"] = "b200"'
run check -p "$TMP/v.json" -c "$CL"
expect_rc 1 "undeclared FFN GPU"
err_has '/groups/1/afd/ffn/gpu: GPU "b200" is not among the plan.s gpus' "undeclared"

# ---- the simulator -------------------------------------------------------------
# simulate runs the AFD replica's decode at hx_cost_afd's step for its batch
# and mean context.  On a sweep from idle (1 req/s, a batch of 8) to near
# the 256 sequences the replica admits (28 req/s, about 200), the mean TPOT
# equals estimate --afd's step at the decode batch and context simulate
# reports (linear between the two whole batches around it) within 5%.
# (It is about 2% above: a request handed over from prefill waits for the
# replica's running step before its first decode, which a short answer's
# TPOT feels.  At 32 req/s requests queue for a slot, and TPOT, which
# counts the wait, is 7% above the step.)
python3 - "$HEXPLAN" "$PLAN" 1 4 8 16 24 28 >"$TMP/sweep" 2>&1 <<'EOF' || fail "AFD sweep: $(cat "$TMP/sweep")"
import json, math, subprocess, sys
hx, plan = sys.argv[1], sys.argv[2]
def step(b, c):
    o = json.loads(subprocess.check_output([hx, "estimate", "-m", "llama-3.1-8b", "--afd",
        "h100-sxm:2:1,l40s:1:1", "--batch", str(b), "--input", str(c - 1), "--output", "2",
        "--format", "json"]))
    return o["decode"]["step_ms"]
bad, batches = [], []
for rate in sys.argv[3:]:
    o = json.loads(subprocess.check_output([hx, "simulate", "-p", plan, "-w",
        "examples/workloads/chat.json", "--rate", rate, "--requests", "3000", "--format", "json"]))
    g = o["groups"][1]
    assert g["finished"] == 3000, g
    B, C = g["decode_batch"], g["decode_context"]
    lo, c = max(1, math.floor(B)), round(C)
    s0 = step(lo, c)
    want = s0 + (B - lo) * (step(lo + 1, c) - s0)
    got = o["tpot_ms"]["mean"]
    batches.append(B)
    print("rate %s: batch %.1f context %.0f, mean TPOT %.3f ms, step %.3f ms" % (rate, B, C, got, want))
    if abs(got / want - 1) > 0.05:
        bad.append(rate)
assert batches[0] < 10 and batches[-1] > 190, batches  # idle to near the 256 slots
assert not bad, bad
EOF
[ -s "$TMP/sweep" ] && ok
# The AFD replica, not a replica of the whole model on its attention GPU:
# that one would step in a few ms at this batch.
run simulate -p "$PLAN" -w examples/workloads/chat.json --rate 1 --requests 200 --format table
expect_rc 0 "simulate an AFD plan (table)"
expect_out 'group g1     utilization [0-9.]+, 200 finished, AFD decode batch [0-9.]+ at context [0-9]+' "table's AFD line"
expect_out 'tpot +3[5-7]\.' "TPOT at the AFD step (35.1 ms at a batch of 8)"

# ---- export: every target refuses, with the reason, and writes nothing ----------
for t in launch k8s kserve llm-d dynamo dot; do
	lossy=--lossy
	[ "$t" = dot ] && lossy=
	run export -p "$PLAN" --to "$t" $lossy -o "$TMP/exp-$t"
	expect_rc 1 "export --to $t refuses an AFD plan"
	expect_err_line "group g1 is attention/FFN disaggregated \\(2 attention instances of h100-sxm, 1 FFN instances of l40s\\): no export target writes an engine's attention/FFN disaggregation, so it cannot be exported to $t" "export --to $t message"
	if [ -e "$TMP/exp-$t" ]; then fail "export --to $t wrote $TMP/exp-$t"; else ok; fi
done

# ---- replan and check --tolerate-failures refuse AFD groups --------------------
run replan -p "$PLAN" -c "$CL" -w examples/workloads/chat.json -o "$TMP/re.json"
expect_rc 1 "replan refuses an AFD plan"
expect_err_line 'group g1 is attention/FFN disaggregated: replan does not adapt AFD groups' "replan message"
run check -p "$PLAN" -c "$CL" -w examples/workloads/chat.json --tolerate-failures 1
expect_rc 1 "check --tolerate-failures refuses an AFD plan"
expect_err_line 'group g1 is attention/FFN disaggregated: --tolerate-failures does not take AFD groups' "tolerate message"

# ---- the reader's bounds and shape, at their pointer -------------------------
reader() { # EDIT POINTER-AND-MESSAGE-RE WHAT
	variant "$1"
	run check -p "$TMP/v.json" -c "$CL"
	expect_rc 1 "$3"
	err_has "v\.json: $2" "$3"
}
reader 'g["afd"]["attention_instances"] = 0' '/groups/1/afd/attention_instances' "attention_instances 0"
reader 'g["afd"]["micro_batches"] = 65' '/groups/1/afd/micro_batches' "micro_batches 65"
reader 'g["afd"]["ffn"]["tp"] = "2"' '/groups/1/afd/ffn/tp' "ffn tp a string"
reader 'g["afd"]["ffn"]["instances"] = 1.5' '/groups/1/afd/ffn/instances' "ffn instances 1.5"
reader 'del g["afd"]["ffn"]["gpu"]' '/groups/1/afd/ffn: missing required key "gpu"' "ffn gpu missing"
reader 'g["afd"]["batch"] = 0' '/groups/1/afd/batch' "batch 0"
reader 'g["afd"]["context"] = -5' '/groups/1/afd/context' "context negative"
reader 'del g["afd"]["step_ms"]' '/groups/1/afd: missing required key "step_ms"' "step_ms missing"
reader 'g["afd"]["ratio"] = 2' '/groups/1/afd/ratio: unknown key' "unknown afd key"
reader 'del r["afd"]' '/groups/1/replicas/0: missing required key "afd" \(the group is an AFD group\)' "replica afd missing"
reader 'r["afd"]["ffn"] = ["l40s-0"]' '/groups/1/replicas/0/afd/ffn/0: must be a GPU as "node:index"' "ffn ref"
reader 'r["afd"]["link"] = {"bw_gbps": 0}' '/groups/1/replicas/0/afd/link/bw_gbps' "link bw 0"
reader 'p["groups"][0]["replicas"][0]["afd"] = r["afd"]' '/groups/0/replicas/0/afd: only a replica of an AFD group' "afd on a plain replica"
reader 'g["stages"] = [{"gpu": "h100-sxm", "tp": 1, "layers": [0, 16]}, {"gpu": "h100-sxm", "tp": 1, "layers": [16, 32]}]; r["links"] = [{"bw_gbps": 100}]; r["placement"] = [["h100-0:1"], ["h100-0:2"]]' '/groups/1/afd: an AFD group has one stage' "two stages"

finish
