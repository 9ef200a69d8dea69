#!/bin/sh
# estimate --afd (issue 22): an attention/FFN-disaggregated decode group's
# per-layer halves, exchange volumes and step time, worked out by hand from
# the model's dimensions and the GPU catalog's constants; bad inputs.
. "$(dirname "$0")/../lib.sh"

# err_first RE WHAT: the first stderr line (a usage error adds the usage).
err_first() {
	if head -n 1 "$TMP/err" | grep -Eq -- "$1"; then ok; else fail "$2: $(head -n 1 "$TMP/err")"; fi
}
# near GOT WANT REL WHAT: |GOT - WANT| <= REL * |WANT|.
near() {
	if python3 -c 'import sys; g,w,r=map(float,sys.argv[1:4]); sys.exit(0 if abs(g-w)<=r*abs(w) else 1)' "$1" "$2" "$3"; then
		ok
	else
		fail "$4: $1, expected $2"
	fi
}

# ---- llama-3.1-8b: 2 attention H100s (TP 1), 1 FFN L40S (TP 1) ------------
# Batch B = 64, input 1024, output 128: mean context C = 1024 + 128/2 = 1088.
# m = 2 micro-batches of 32: 16 sequences on each attention instance, all
# 32 tokens on the FFN instance.  The link: --nic-gbps 100 = 12.5e9 B/s,
# 0.02 ms (estimate's network link).
#
# Model (profiles/models.json): L 32, hidden h 4096, 32 heads, 8 KV heads,
# head_dim 128, intermediate 14336 (gated), vocab 128256, untied, BF16.
#
# Exchange, per layer each way: B * h * 2 bytes = 64 * 4096 * 2 = 524,288.
# One micro-batch, one way: an attention instance sends 16 * 8192 = 131,072
# bytes, the FFN instance receives 32 * 8192 = 262,144 (the busier end):
#   T_c = 0.02 ms + 262144 / 12.5e9 s = 0.020 + 0.02097152 = 0.04097152 ms.
#
# Every kernel is max(sqrt(c^2 + m^2), floor) with c = FLOPs / (peak *
# e), m = bytes / (bandwidth * e_mem); both sides' steps are <= 512 tokens,
# so the floor is graph_floor_us = 2.2 us.
# H100 (gpus.json): 989.4 TFLOPS, e_compute 0.65, e_attn 0.5, 3350 GB/s,
# e_mem 0.9, iter_overhead_ms 1.25, seq_overhead_us 0.
#   QKV GEMM 4096 x 6144, 16 rows: c = 2*16*4096*6144 / (989.4e12*0.65)
#     = 1.2522 us, m = (4096*6144*2 + 16*10240*2) B / 3015e9 B/s = 16.8024 us
#     -> 16.8490 us
#   O GEMM 4096 x 4096: c = 0.8348 us, m = 11.2161 us -> 11.2471 us
#   attention: 16 * 1088 tokens * 4096 KV bytes = 71.30 MB, m = 23.6495 us;
#     c = 2 * 16*1088 * 32 * 256 / (989.4e12 * 0.5) = 0.5765 us -> 23.6565 us
#   input norm 16*4096*4 B: 0.0869 us, rotary 16*40*128*4 B: 0.1087 us,
#     residual 16*4096*6 B: 0.1304 us, all under the floor: 3 * 2.2 us
#   T_a = 16.8490 + 11.2471 + 23.6565 + 6.6 = 58.3526 us
# L40S: 362.1 TFLOPS, e_compute 0.6, 864 GB/s, e_mem 0.8 (691.2e9 B/s).
#   gate-up GEMM 4096 x 28672, 32 rows: c = 34.5954 us,
#     m = (4096*28672*2 + 32*32768*2) B / 691.2e9 = 342.8504 us -> 344.5914 us
#   down GEMM 14336 x 4096: c = 17.2977 us, m = 171.6148 us -> 172.4844 us
#   norm 32*4096*4 B: 0.7585 us -> 2.2; activation 32*14336*3*2 B:
#     3.9822 us; residual 32*4096*6 B: 1.1378 us -> 2.2
#   T_f = 344.5914 + 172.4844 + 2.2 + 3.9822 + 2.2 = 525.4580 us
# Per layer: cycle = T_a + T_f + 2 T_c = 665.7536 us; slowest = T_f.
# Pipeline (cost.c, after MegaScale-Infer): cycle + 31 max(2 T_f, cycle) +
#   (2 - 1) T_f = 665.7536 + 31 * 1050.9160 + 525.4580 = 33,769.61 us.
# Head (H100, 128256 x 4096 for 16 rows): c = 26.1398 us, m = 349.8867 us
#   -> 350.8618 us + its norm (floor 2.2 us), per micro-batch: 2 * 353.0618.
# Step = 33.7696 + 0.7061 + 1.25 = 35.7257 ms; 64 / 35.7257 ms = 1,791.4
# tokens/s.  (The two micro-batches lose here: the L40S reads its 0.35 GB
# of MLP weights a layer once for each; see --micro-batches 1 below.)
# The python below redoes this arithmetic to full precision.
run estimate -m llama-3.1-8b --afd h100-sxm:2:1,l40s:1:1 --batch 64 --input 1024 --output 128
expect_rc 0 "afd estimate json"
cp "$TMP/out" "$TMP/dense"
python3 - "$TMP/out" >"$TMP/want" <<'EOF' || fail "hand computation"
import json, math, sys
o = json.load(open(sys.argv[1]))
fl = 2.2e-6
def k(flops, peak, e, byts, bw):
    c, m = flops / (peak * e), byts / bw
    return max(math.sqrt(c * c + m * m), fl)
H = dict(peak=989.4e12, e=0.65, ea=0.5, bw=3350e9 * 0.9)
S = dict(peak=362.1e12, e=0.6, bw=864e9 * 0.8)
def gemm(g, m, kk, n):
    return k(2 * m * kk * n, g["peak"], g["e"], kk * n * 2 + m * (kk + n) * 2, g["bw"])
def ew(g, b):
    return max(b / g["bw"], fl)
h, t = 4096, 16
Ta = (gemm(H, t, h, 6144) + gemm(H, t, h, 4096) + ew(H, t * h * 4) + ew(H, t * 40 * 128 * 4)
      + ew(H, t * h * 6) + k(2 * t * 1088 * 32 * 256, H["peak"], H["ea"], t * 1088 * 4096, H["bw"]))
s = 32
Tf = (gemm(S, s, h, 2 * 14336) + gemm(S, s, 14336, h) + ew(S, s * h * 4)
      + ew(S, s * 14336 * 3 * 2) + ew(S, s * h * 6))
Tc = 0.02e-3 + 32 * 8192 / 12.5e9
cyc = Ta + Tf + 2 * Tc
slow = max(Ta, Tf, Tc)
pipe = cyc + 31 * max(2 * slow, cyc) + slow
head = 2 * (gemm(H, t, h, 128256) + ew(H, t * h * 4))
step = pipe + head + 1.25e-3
print(Ta * 1e3, Tf * 1e3, Tc * 1e3, pipe * 1e3, head * 1e3, step * 1e3, 64 / step)
EOF
read -r wa wf wc wp wh ws wt <"$TMP/want"
l=decode.per_layer.0
[ "$(jnum $l.kind)" = dense ] && [ "$(jnum $l.layers)" = 32 ] && ok || fail "one kind of layer, dense, 32"
[ "$(jnum $l.exchange_bytes_each_way)" = 524288.0 ] && ok || fail "exchange bytes $(jnum $l.exchange_bytes_each_way)"
near "$(jnum $l.exchange_ms)" 0.04097152 1e-5 "exchange time"
near "$wa" 0.0583526 1e-5 "hand T_a (script)"
near "$wf" 0.5254580 1e-5 "hand T_f (script)"
near "$(jnum $l.attention_ms)" "$wa" 1e-5 "attention per layer"
near "$(jnum $l.ffn_ms)" "$wf" 1e-5 "ffn per layer"
near "$(jnum decode.pipeline_ms)" "$wp" 1e-5 "pipeline"
near "$(jnum decode.head_ms)" "$wh" 1e-5 "head"
near "$(jnum decode.overhead_ms)" 1.25 1e-9 "overhead"
near "$(jnum decode.step_ms)" "$ws" 1e-5 "step"
near "$(jnum decode.step_ms)" 35.7257 1e-5 "step (the comment's figure)"
near "$(jnum decode.tokens_per_s)" 1791.4 1e-4 "tokens/s (the comment's figure)"
near "$(jnum decode.tokens_per_s)" "$wt" 1e-5 "tokens/s"
# Memory.  Attention GPU: per layer QKV + O = 4096 * (6144 + 4096) * 2 B
# = 83,886,080 and two RMS norms 2 * 4096 * 2 = 16,384; 32 layers, plus the
# embedding and the (untied) head, 2 * 128256 * 4096 * 2 = 2,101,346,304:
# 4,786,225,152 B = 4.4575 GiB.  FFN GPU: 3 * 4096 * 14336 * 2 B a layer,
# 32 layers: 11,274,289,152 B = 10.5 GiB.  KV: 79.6 GiB * 0.9 - 4.4575 - 2
# = 65.1825 GiB at 131,072 B a token (32 layers * 4096) = 533,974 tokens
# an instance, 1,067,948 for the two.
near "$(jnum memory.attention.weights_gib)" 4.457520 1e-5 "attention weights"
near "$(jnum memory.ffn.weights_gib)" 10.5 1e-5 "ffn weights"
# (JSON numbers carry 6 significant digits.)
near "$(jnum memory.attention.kv_capacity_tokens)" 1067948 1e-5 "kv tokens"
[ "$(jnum afd.attention.instances)" = 2 ] && [ "$(jnum afd.ffn.gpu)" = l40s ] && [ "$(jnum afd.micro_batches)" = 2 ] && ok || fail "afd shape keys"
run estimate -m llama-3.1-8b --afd h100-sxm:2:1,l40s:1:1 --batch 64 --input 1024 --output 128
cmp -s "$TMP/out" "$TMP/dense" && ok || fail "afd estimate is not deterministic"

# m = 1: nothing overlaps, the step is L round trips (the same context).
# Micro-batch of 64: 32 per attention instance, 64 tokens on the FFN.
run estimate -m llama-3.1-8b --afd h100-sxm:2:1,l40s:1:1 --batch 64 --input 1024 --output 128 --micro-batches 1
expect_rc 0 "afd m 1"
python3 -c 'import json,sys
o=json.load(open(sys.argv[1]))["decode"]; l=o["per_layer"][0]
c=l["attention_ms"]+l["ffn_ms"]+2*l["exchange_ms"]
sys.exit(0 if abs(o["pipeline_ms"]-32*c)<=1e-4*o["pipeline_ms"] else 1)' "$TMP/out" && ok || fail "m 1 pipeline is 32 cycles"
# One way for all 64 tokens: 0.02 ms + 64 * 8192 / 12.5e9 s = 0.06194304 ms.
near "$(jnum decode.per_layer.0.exchange_ms)" 0.06194304 1e-5 "m 1 exchange time"

# ---- mixtral-8x7b (MoE, 8 experts, top 2): the exchange carries k copies ---
# 4 attention instances of 2 H100s, 8 FFN instances of 1 H100 (one expert
# each), batch 256, 400 Gb/s (50e9 B/s).  Per layer each way: 256 * 4096 *
# 2 B * 2 copies = 4,194,304 bytes.  One micro-batch (128): an attention
# instance sends 32 * 8192 * 2 = 524,288 B, an FFN instance receives
# 128 * 2 / 8 = 32 rows * 8192 = 262,144 B: T_c = 0.02 ms + 524288 / 50e9 s
# = 0.03048576 ms.  FFN weights a GPU: one expert, 3 * 4096 * 14336 * 2 B,
# and the router 4096 * 8 * 2 B, over 32 layers = 11,276,386,304 B =
# 10.501953 GiB.
run estimate -m mixtral-8x7b --afd h100-sxm:4:2,h100-sxm:8:1 --batch 256 --input 2000 --output 500 --nic-gbps 400
expect_rc 0 "afd mixtral"
[ "$(jnum decode.per_layer.0.kind)" = moe ] && ok || fail "mixtral layers are moe"
near "$(jnum decode.per_layer.0.exchange_bytes_each_way)" 4194304 1e-6 "moe exchange bytes"
near "$(jnum decode.per_layer.0.exchange_ms)" 0.03048576 1e-5 "moe exchange time"
near "$(jnum memory.ffn.weights_gib)" 10.501953 1e-5 "moe ffn weights"
python3 -c 'import json,sys
o=json.load(open(sys.argv[1]))["decode"]; l=o["per_layer"][0]
c=l["attention_ms"]+l["ffn_ms"]+2*l["exchange_ms"]; s=max(l["attention_ms"],l["ffn_ms"],l["exchange_ms"])
p=c+31*max(2*s,c)+s
sys.exit(0 if abs(o["pipeline_ms"]-p)<=1e-4*p and abs(o["step_ms"]-(o["pipeline_ms"]+o["head_ms"]+o["overhead_ms"]))<=1e-4*o["step_ms"] else 1)' "$TMP/out" && ok || fail "moe step formula"

# With the pipeline full (m slowest >= cycle: batch 1024, m 4) the step's
# layers are MegaScale-Infer's closed form, cycle + slowest (m L - 1).
run estimate -m mixtral-8x7b --afd h100-sxm:4:2,h100-sxm:8:1 --batch 1024 --input 2000 --output 500 --nic-gbps 400 --micro-batches 4
expect_rc 0 "afd mixtral m 4"
python3 -c 'import json,sys
o=json.load(open(sys.argv[1]))["decode"]; l=o["per_layer"][0]
full=4*l["slowest_ms"]>=l["cycle_ms"]; p=l["cycle_ms"]+l["slowest_ms"]*(4*32-1)
sys.exit(0 if full and abs(o["pipeline_ms"]-p)<=1e-4*p else 1)' "$TMP/out" && ok || fail "MegaScale-Infer closed form"

run estimate -m llama-3.1-8b --afd h100-sxm:2:1,l40s:1:1 --batch 64 --format table
expect_rc 0 "afd table"
expect_out '^llama-3\.1-8b AFD: attention 2 x h100-sxm \(tp 1 each\), FFN 1 x l40s \(tp 1 each\), 2 micro-batches, link 100 Gb/s 0\.02 ms; weights bf16, kv fp16$' "table head"
expect_out '^  dense x32  attention [0-9.]+  ffn [0-9.]+  exchange [0-9.]+ ms per micro-batch; 524288 bytes each way per layer$' "table layer line"
expect_out '^memory    attention [0-9.]+ GiB weights per GPU' "table memory line"

# ---- bad inputs ---------------------------------------------------------
run estimate -m llama-3.1-8b --afd h100-sxm:2,l40s:1:1
expect_rc 2 "afd without a TP"
err_first '^hexplan: error: --afd must be ATTN_GPU:A:TP,FFN_GPU:F:TP .*not "h100-sxm:2,l40s:1:1"$' "afd syntax message"
run estimate -m llama-3.1-8b --afd h100-sxm:0:1,l40s:1:1
expect_rc 2 "afd zero instances"
err_first -- '--afd must be ATTN_GPU:A:TP,FFN_GPU:F:TP' "afd zero message"
run estimate -m llama-3.1-8b --afd h100-sxm:1:1
expect_rc 2 "afd one side"
run estimate -m llama-3.1-8b --afd h100-sxm:1:1,nosuch:1:1
expect_rc 1 "afd unknown gpu"
expect_err_line '^hexplan: error: unknown GPU "nosuch" in --afd' "afd unknown gpu message"
run estimate -m llama-3.1-8b --afd h100-sxm:1:3,l40s:1:1
expect_rc 2 "afd attention tp not dividing heads"
err_first -- '--afd: attention tensor parallel degree 3 must divide the 32 attention heads of llama-3\.1-8b' "afd tp message"
run estimate -m llama-3.1-8b --afd h100-sxm:1:1,l40s:1:5
expect_rc 2 "afd ffn tp not dividing intermediate"
err_first -- '--afd: FFN tensor parallel degree 5 must divide the intermediate size 14336' "afd ffn tp message"
run estimate -m mixtral-8x7b --afd h100-sxm:1:2,h100-sxm:3:1
expect_rc 2 "afd ffn instances not dividing experts"
err_first -- '--afd: 3 FFN instances must divide the 8 experts of mixtral-8x7b' "afd experts message"
run estimate -m llama-3.1-8b --afd h100-sxm:1:1,l40s:1:1 -g h100-sxm
expect_rc 2 "afd with -g"
err_first -- '--afd names its GPUs: -g does not apply' "afd -g message"
run estimate -m llama-3.1-8b --afd h100-sxm:1:1,l40s:1:1 --tp 2
expect_rc 2 "afd with --tp"
err_first -- '--afd does not combine with --tp' "afd --tp message"
run estimate -m llama-3.1-8b --afd h100-sxm:1:1,l40s:1:1 -w examples/workloads/chat.json
expect_rc 2 "afd with -w"
run estimate -m llama-3.1-8b -g h100-sxm --micro-batches 2
expect_rc 2 "micro-batches without afd"
err_first -- '--micro-batches needs --afd' "micro-batches message"
run estimate -m llama-3.1-8b --afd h100-sxm:1:1,l40s:1:1 --micro-batches 0
expect_rc 2 "micro-batches 0"
err_first -- '--micro-batches must be an integer from 1 to 64, not "0"' "micro-batches range message"
run estimate -m llama-3.1-8b --afd h100-sxm:1:1,l40s:1:1 --micro-batches 4 --batch 3
expect_rc 2 "more micro-batches than sequences"
err_first -- '--micro-batches 4 exceeds --batch 3' "micro-batches batch message"
run estimate -m llama-3.1-8b --afd l4:1:1,l40s:1:1 --batch 4096 --input 8192
expect_rc 3 "batch beyond the attention side's KV"
expect_err_line '^hexplan: error: the KV cache of 1 x l4 \(tp 1\) holds [0-9]+ tokens but a batch of 4096 requests' "afd kv message"
run estimate -m llama-3.1-405b --afd h100-sxm:1:8,l4:1:1
expect_rc 3 "ffn side does not fit"
expect_err_line '^hexplan: error: the FFN side of llama-3\.1-405b does not fit on 1 x l4 \(tp 1\)' "afd ffn fit message"
[ -s "$TMP/out" ] && fail "output despite infeasible" || ok

finish
