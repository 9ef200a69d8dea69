#!/bin/sh
# estimate: keys, formats, determinism, capacity, infeasibility.
. "$(dirname "$0")/../lib.sh"

run estimate -m llama-3.1-8b -g h100-sxm --batch 8 --input 1024 --output 128
expect_rc 0 "estimate json"
for k in prefill.latency_ms decode.step_ms memory.kv_capacity_tokens memory.max_batch \
	prefill.per_layer_ms.linear prefill.per_layer_ms.attention \
	decode.per_layer_ms.communication decode.per_layer_ms.overhead request.e2e_ms; do
	v=$(jnum "$k" 2>/dev/null) && ok || fail "key $k missing"
done
# A prefill of 8 x 1024 tokens on one H100: compute-bound, 2 * 8.03e9 * 8192
# FLOPs at ~65% of 989 TFLOPS is about 200 ms.
approx "$(jnum prefill.latency_ms)" 205 0.15 && ok || fail "prefill latency $(jnum prefill.latency_ms)"
# A decode step streams 16.1 GB of weights (5.3 ms at 90% of 3.35 TB/s) and
# 8 x ~1,090 tokens of KV at 128 KiB (0.4 ms), plus the 1.25 ms iteration
# overhead: about 7 ms.
approx "$(jnum decode.step_ms)" 7.0 0.1 && ok || fail "decode step $(jnum decode.step_ms)"
[ "$(jnum memory.kv_bytes_per_token)" = "131072.0" ] && ok || fail "kv bytes per token"
cp "$TMP/out" "$TMP/first"
run estimate -m llama-3.1-8b -g h100-sxm --batch 8 --input 1024 --output 128
cmp -s "$TMP/out" "$TMP/first" && ok || fail "estimate is not deterministic"

run estimate -m llama-3.1-70b -g a100-80g --tp 4 --format table
expect_rc 0 "estimate table"
expect_out '^prefill ' "table prefill line"
expect_out '^memory ' "table memory line"

run estimate -m llama-3.1-70b -g l40s --tp 4 --pp 2
expect_rc 0 "estimate pp"
[ "$(jnum stages.1.layers.1)" = "80" ] && ok || fail "pp stages"

run estimate -m examples/models/qwen2.5-7b-instruct/config.json -g l4 --weights fp8 --kv fp8
expect_rc 0 "estimate config.json fp8"
[ "$(jnum weights)" = "fp8" ] && ok || fail "weights fp8"

run estimate -m llama-3.1-8b -g h100-sxm -w examples/workloads/chat.json
expect_rc 0 "estimate with workload"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["capacity"]; sys.exit(0 if c["rps"]>1 and c["tpot_ms"]<=100 and c["ttft_ms"]<=2000 and c["binding"] else 1)' "$TMP/out" && ok || fail "capacity figures"

run estimate -m llama-3.1-405b -g l4
expect_rc 3 "405b on one l4"
expect_err_line '^hexplan: error: llama-3\.1-405b does not fit on 1 x l4 \(tp 1, pp 1\): .*short by [0-9.]+ GiB$' "does not fit message"
[ -s "$TMP/out" ] && fail "output despite infeasible" || ok

run estimate -m llama-3.1-8b -g l4 --batch 4096 --input 8192
expect_rc 3 "batch larger than the KV cache"
expect_err_line 'KV cache .* holds [0-9]+ tokens' "kv message"

run estimate -m llama-3.1-8b -g l4 --tp 3
expect_rc 2 "tp not dividing heads"

run estimate -m nosuch -g l4
expect_rc 1 "unknown model"
expect_err_line '^hexplan: error: unknown model "nosuch"' "unknown model message"

# Expert parallelism and data-parallel attention (issue 21).
# err_first RE WHAT: the first stderr line (a usage error adds the usage).
err_first() {
	if head -n 1 "$TMP/err" | grep -Eq -- "$1"; then ok; else fail "$2: $(head -n 1 "$TMP/err")"; fi
}
run estimate -m mixtral-8x7b -g h100-sxm --ep 8 --dp-attention --batch 64 --input 1000 --output 100
expect_rc 0 "estimate ep 8 dp attention"
[ "$(jnum ep)" = 8 ] && [ "$(jnum dp_attention)" = 8 ] && [ "$(jnum attention_tp)" = 1 ] && [ "$(jnum tp)" = 8 ] && ok || fail "ep shape keys"
for k in prefill.per_layer_ms.all_to_all decode.per_layer_ms.all_to_all eplb_imbalance nic_gbps redundant_experts; do
	jnum "$k" >/dev/null 2>&1 && ok || fail "key $k missing"
done
# Hand-computed in check_cost: 14,485,553,152 bytes of weights a GPU.
approx "$(jnum memory.weights_gib)" 13.4907 0.001 && ok || fail "ep weights $(jnum memory.weights_gib)"
cp "$TMP/out" "$TMP/ep"
run estimate -m mixtral-8x7b -g h100-sxm --tp 8 --batch 64 --input 1000 --output 100
python3 -c 'import json,sys
a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
sys.exit(0 if "ep" not in b and "all_to_all" not in b["decode"]["per_layer_ms"] and a["memory"]["weights_gib"] > b["memory"]["weights_gib"] else 1)' "$TMP/ep" "$TMP/out" && ok || fail "tp keeps its keys; dp attention replicates attention"

run estimate -m deepseek-v3 -g h100-sxm --ep 32 --dp-attention --redundant-experts 32 --nic-gbps 400 --batch 256 --input 2000 --output 100 --format table
expect_rc 0 "estimate deepseek ep 32 table"
expect_out '^deepseek-v3 on 32 x h100-sxm \(tp 32, pp 1, ep 32, dp attention 32\)' "ep table head"
expect_out '^  all-to-all prefill [0-9.]+  decode [0-9.]+ ms/layer before overlap$' "ep table all-to-all"

run estimate -m qwen3-30b-a3b -g h100-sxm --ep 8 --dp-attention --dp 2 -w examples/workloads/chat.json
expect_rc 0 "estimate ep with workload"
[ "$(jnum attention_tp)" = 4 ] && ok || fail "attention tp 8/2"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["capacity"]; sys.exit(0 if c["rps"]>0 else 1)' "$TMP/out" && ok || fail "ep capacity"

run estimate -m mixtral-8x7b -g h100-sxm --ep 3
expect_rc 2 "ep not dividing the experts"
err_first '^hexplan: error: expert parallel size 3 must divide the 8 experts of mixtral-8x7b$' "ep divides experts"
[ -s "$TMP/out" ] && fail "output despite a bad ep" || ok

run estimate -m mixtral-8x7b -g h100-sxm --ep 6 --dp-attention --redundant-experts 2
expect_rc 2 "ep not dividing experts plus redundant"
err_first '^hexplan: error: expert parallel size 6 must divide the 8 experts of mixtral-8x7b plus 2 redundant$' "redundant message"

run estimate -m mixtral-8x7b -g h100-sxm --ep 6 --dp-attention --redundant-experts 4
expect_rc 0 "redundant experts make ep 6 divide"

run estimate -m llama-3.1-8b -g h100-sxm --ep 2
expect_rc 2 "ep on a dense model"
err_first '^hexplan: error: expert parallelism needs a mixture-of-experts model: llama-3\.1-8b is dense$' "dense model message"

run estimate -m mixtral-8x7b -g h100-sxm --ep 8 --dp-attention --dp 3
expect_rc 2 "dp attention ranks not dividing the GPUs"
err_first '^hexplan: error: data-parallel attention of 3 ranks does not fit on 8 GPUs: the ranks must divide the GPUs$' "dp ranks message"

run estimate -m deepseek-v3 -g h100-sxm --ep 8 --dp-attention
expect_rc 3 "dp attention that does not fit in memory"
expect_err_line '^hexplan: error: deepseek-v3 does not fit on 8 x h100-sxm \(tp 8, pp 1\): .*short by [0-9.]+ GiB$' "dp attention memory message"

run estimate -m mixtral-8x7b -g h100-sxm --tp 8 --dp-attention
expect_rc 2 "dp attention on a MoE model without ep"
err_first '^hexplan: error: data-parallel attention on mixtral-8x7b, a mixture of experts, needs expert parallelism$' "dp without ep message"

run estimate -m llama-3.1-8b -g h100-sxm --tp 8 --dp-attention --dp 4 --batch 8
expect_rc 0 "dp attention on a dense model"
[ "$(jnum attention_tp)" = 2 ] && ok || fail "dense dp attention tp"

run estimate -m mixtral-8x7b -g h100-sxm --tp 4 --ep 8
expect_rc 2 "tp other than ep"
err_first '^hexplan: error: --tp 4 must equal --ep 8 \(the GPUs of each stage\)$' "tp ep message"

run estimate -m mixtral-8x7b -g h100-sxm --dp 2
expect_rc 2 "dp without dp attention"
err_first '^hexplan: error: --dp needs --dp-attention$' "dp message"

run estimate -m mixtral-8x7b -g h100-sxm --redundant-experts 8
expect_rc 2 "redundant experts without ep"
err_first '^hexplan: error: --redundant-experts and --eplb-imbalance need --ep$' "redundant message"

finish
