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
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json --capacity --plot "$TMP/cap.svg"
expect_rc 0 "capacity"
cp "$TMP/out" "$TMP/cap.json"
cap=$(jnum capacity_rps)
pred=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["predicted"]["capacity_rps"])' "$TMP/p.json")
approx "$cap" "$pred" 0.25 && ok || fail "simulated capacity $cap vs predicted $pred"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["slo_attainment"] >= 0.99 else 1)' "$TMP/out" && ok || fail "attainment at capacity"
# The curve the search bisected: the capacity is the highest rate tried
# that met the target, every rate above it that was tried missed, and each
# point's verdict is its attainment against the target.
python3 - "$TMP/out" <<'PY' && ok || fail "capacity curve: $(head -c 600 "$TMP/out")"
import json, sys
d = json.load(open(sys.argv[1]))
c, cap, tgt = d["curve"], d["capacity_rps"], d["slo"]["attainment_target"]
assert len(c) >= 3, c
assert all(p["meets"] == (p["attainment"] >= tgt) for p in c), c
assert max(p["rate_rps"] for p in c if p["meets"]) == cap, (cap, c)
assert all(not p["meets"] for p in c if p["rate_rps"] > cap), c
assert all(0 < p["judged"] <= p["requests"] for p in c), c
PY
# --plot draws it: one point per rate tried, the two lines; the table
# lists the rates tried; the same run draws the same bytes.
python3 - "$TMP/cap.svg" "$TMP/cap.json" <<'PY' && ok || fail "capacity plot"
import json, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
n = len(json.load(open(sys.argv[2]))["curve"])
circles = [e for e in root.iter() if e.tag.endswith("circle")]
assert len(circles) == n, (len(circles), n)
classes = {e.get("class") for e in root.iter()}
assert {"target", "capacity", "curve"} <= classes, classes
PY
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json --capacity --plot "$TMP/cap2.svg" --format table
expect_rc 0 "capacity --plot --format table"
expect_out "^tried +[0-9.]+ req/s: attainment [0-9.]+ over [0-9]+ of [0-9]+ requests, (meets the target|misses it)$" "table's tried lines"
cmp -s "$TMP/cap.svg" "$TMP/cap2.svg" && ok || fail "capacity plot not deterministic"
# --precision: the capacity's standard error is reported, and a search
# asked for a precision ends with it met (or at the longest runs).
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["capacity_se_rps"] >= 0 and all(p["attainment_se"] >= 0 for p in d["curve"])))' "$TMP/cap.json" && ok || fail "capacity_se_rps"
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json --capacity --precision 0.1 --requests 500
expect_rc 0 "capacity --precision 0.1"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["capacity_se_rps"] <= 0.1 * d["capacity_rps"] or d["requests"]["total"] >= 100000))' "$TMP/out" && ok || fail "--precision 0.1 not met: $(head -c 300 "$TMP/out")"
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json --precision 0.1
expect_rc 2 "--precision without --capacity"
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json --capacity --precision 0.9
expect_rc 2 "--precision above 0.5"
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json --plot "$TMP/x.svg"
expect_rc 2 "--plot without --capacity"
[ ! -e "$TMP/x.svg" ] && ok || fail "--plot without --capacity wrote a file"
run simulate -p "$TMP/p.json" -w examples/workloads/chat.json --capacity --plot "$TMP/same.json" -o "$TMP/same.json"
expect_rc 2 "--plot and -o the same file"

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

# Means beside the percentiles: the report's mean TTFT is the per-request one.
python3 -c 'import json,sys
rep=json.load(open(sys.argv[1]))
rows=[l.split(",") for l in open(sys.argv[2]).read().splitlines()[1:]]
t=[float(r[6]) for r in rows if r[12]=="0"]
sys.exit(0 if abs(sum(t)/len(t)-rep["ttft_ms"]["mean"])<1e-3*max(1,rep["ttft_ms"]["mean"]) else 1)' "$TMP/first" "$TMP/r.csv" && ok || fail "mean TTFT is the per-request mean"

# Stages: one continuous run through every stage, about rate x duration
# requests in each (Poisson: within 4 standard deviations).
python3 -c 'import json,sys
w=json.load(open("examples/workloads/chat.json")); del w["rate_rps"]
w["stages"]=[{"rate_rps":4,"duration_s":60},{"rate_rps":12,"duration_s":60}]
json.dump(w,open(sys.argv[1],"w"))
w["shared_prefix"]={"tokens":900,"groups":2}
json.dump(w,open(sys.argv[2],"w"))
w["shared_prefix"]={"tokens":900,"groups":1000000}
json.dump(w,open(sys.argv[3],"w"))
w["shared_prefix"]={"tokens":16,"groups":2,"users_per_group":3}
json.dump(w,open(sys.argv[4],"w"))' "$TMP/st.json" "$TMP/sp.json" "$TMP/sp-many.json" "$TMP/sp-users.json"
run simulate -p "$TMP/p.json" -w "$TMP/st.json" --per-request "$TMP/st.csv"
expect_rc 0 "simulate stages"
python3 -c 'import sys
rows=[l.split(",") for l in open(sys.argv[1]).read().splitlines()[1:]]
a=[float(r[1]) for r in rows]
n0=sum(1 for x in a if x<60); n1=sum(1 for x in a if 60<=x<120)
ok=abs(n0-240)<=4*240**.5 and abs(n1-720)<=4*720**.5 and max(a)<=120 and len(a)==n0+n1
sys.exit(0 if ok else 1)' "$TMP/st.csv" && ok || fail "stage arrivals"
[ "$(jnum slo_attainment)" != "" ] && ok || fail "stages report"
cp "$TMP/out" "$TMP/st.out"
# --rate or --requests draw from the rate instead (the highest stage's).
run simulate -p "$TMP/p.json" -w "$TMP/st.json" --requests 100
[ "$(jnum requests.total)" = "100" ] && ok || fail "--requests with stages"

# A shared prefix the prefix cache holds: prompts mostly cached, so TTFT
# falls; as many groups as requests leaves nothing to reuse.
run simulate -p "$TMP/p.json" -w "$TMP/sp.json"
expect_rc 0 "simulate shared prefix"
sp=$(jnum ttft_ms.mean)
run simulate -p "$TMP/p.json" -w "$TMP/sp-many.json"
many=$(jnum ttft_ms.mean)
run simulate -p "$TMP/p.json" -w "$TMP/sp-users.json"
users=$(jnum ttft_ms.mean)
cp "$TMP/st.out" "$TMP/out"
none=$(jnum ttft_ms.mean)
# Six users whose prompts recur: nearly every prompt is cached whole.
python3 -c 'import sys; u,sp=map(float,sys.argv[1:]); sys.exit(0 if u<sp else 1)' "$users" "$sp" && ok || fail "recurring prompts: TTFT $users, not below $sp"
python3 -c 'import sys; sp,many,none=map(float,sys.argv[1:]); sys.exit(0 if sp<0.8*none and abs(many-none)<=0.05*none else 1)' "$sp" "$many" "$none" && ok || fail "prefix cache: TTFT $sp (2 groups), $many (1e6 groups), $none (none)"

finish
