#!/bin/sh
# simulate: reports, determinism, per-request CSV, capacity, traces.
. "$(dirname "$0")/../lib.sh"

hx plan -c examples/clusters/h100-node.json -w examples/workloads/chat.json -o "$TMP/p.json" || fail "plan"

run simulate -p "$TMP/p.json" -w examples/workloads/chat.json --requests 3000 --per-request "$TMP/r.csv"
expect_rc 0 "simulate"
for k in requests.finished requests.dropped slo_attainment goodput_rps throughput_tps \
	ttft_ms.p50 ttft_ms.p99 tpot_ms.p90 e2e_ms.p95 groups.0.utilization usd_per_m_tokens; do
	jnum "$k" >/dev/null 2>&1 && ok || fail "report key $k"
done
[ "$(jnum requests.finished)" = "3000" ] && ok || fail "all 3000 requests finish"
cp "$TMP/out" "$TMP/first"
[ "$(wc -l <"$TMP/r.csv")" -eq 3001 ] && ok || fail "per-request CSV rows"
head -1 "$TMP/r.csv" | grep -q '^id,arrival_s,input_tokens,output_tokens,group,replica,ttft_ms,tpot_ms,e2e_ms,met_slo' && ok || fail "per-request header"
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json --requests 3000
cmp -s "$TMP/out" "$TMP/first" && ok || fail "simulate is not deterministic"
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json --requests 3000 --seed 2
cmp -s "$TMP/out" "$TMP/first" && fail "another seed gives the same report" || ok

run simulate -p "$TMP/p.json" -w examples/workloads/chat.json --requests 2000 --format table
expect_rc 0 "simulate table"
expect_out '^slo +ttft 2000 ms, tpot 100 ms: attainment' "table slo line"

# Capacity: the highest rate meeting the SLO; the plan's prediction is near.
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json --capacity
expect_rc 0 "capacity"
cap=$(jnum capacity_rps)
pred=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["predicted"]["capacity_rps"])' "$TMP/p.json")
approx "$cap" "$pred" 0.25 && ok || fail "simulated capacity $cap vs predicted $pred"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["slo_attainment"] >= 0.99 else 1)' "$TMP/out" && ok || fail "attainment at capacity"

# A trace: its requests, the workload's SLOs; --rate rescales arrivals.
hx trace --shape conversation --rate 50 --duration 30 --seed 4 -o "$TMP/t.csv" 2>/dev/null
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json -t "$TMP/t.csv"
expect_rc 0 "simulate a trace"
n=$(($(wc -l <"$TMP/t.csv") - 1))
[ "$(jnum requests.total)" = "$n" ] && ok || fail "trace requests"
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json -t "$TMP/t.csv" --rate 100
approx "$(jnum offered_rps)" 100 0.01 && ok || fail "--rate rescales the trace: $(jnum offered_rps)"

# The public Azure conversation trace against the mixed cluster's baseline.
azure=../shared/data/traces/AzureLLMInferenceTrace_conv.csv
if [ -f "$azure" ]; then
	hx plan -c examples/clusters/mixed.json -w examples/workloads/chat.json -m llama-3.1-70b -o "$TMP/m.json"
	run simulate -p "$TMP/m.json" -w examples/workloads/chat.json -t "$azure"
	expect_rc 0 "replay the Azure trace"
	python3 - "$TMP/out" <<'PY' && ok || fail "Azure replay figures"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["requests"]
assert r["total"] == 19366 and r["finished"] + r["dropped"] == 19366, r
assert r["dropped"] < 200, r
assert 5.0 < d["offered_rps"] < 6.0, d["offered_rps"]
assert 0.9 < d["slo_attainment"] <= 1, d["slo_attainment"]
assert 0 < d["ttft_ms"]["p50"] <= d["ttft_ms"]["p99"]
assert 0 < d["tpot_ms"]["p50"] <= d["tpot_ms"]["p99"] < 1000
assert 900 < d["throughput_tps"] < 1400, d["throughput_tps"]
PY
fi

run simulate -p "$TMP/p.json"
expect_rc 2 "no workload"
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json --capacity -t "$TMP/t.csv"
expect_rc 2 "--capacity with a trace"
run simulate -p tests/data/bad/cluster-truncated.json -w examples/workloads/chat.json
expect_rc 1 "bad plan"
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json -t tests/data/bad/trace-negative-length.csv
expect_rc 1 "bad trace"
expect_err_line '^hexplan: error: tests/data/bad/trace-negative-length\.csv:[0-9]+: ' "bad trace message"

finish
