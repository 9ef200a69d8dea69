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
# A decode step streams 16 GB of weights at ~80% of 3.35 TB/s plus overhead.
approx "$(jnum decode.step_ms)" 9.5 0.25 && ok || fail "decode step $(jnum decode.step_ms)"
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

finish
