#!/bin/sh
# calibrate: timings produced with known constants are fitted back, and the
# calibration file makes estimate reproduce them.
. "$(dirname "$0")/../lib.sh"

cat >"$TMP/truth.json" <<'JSON'
{"schema": "hexplan.calibration", "version": 1,
 "gpus": {"l40s": {"e_compute": 0.5, "e_mem": 0.7, "kernel_floor_us": 6,
                   "iter_overhead_ms": 5, "e_attn": 0.35}}}
JSON
echo "gpu,model,tp,phase,batch,tokens,context,ms" >"$TMP/m.csv"
for tp in 1 2; do
	for cfg in "1 256" "1 2048" "4 1024" "16 512"; do
		set -- $cfg
		run --calibration "$TMP/truth.json" estimate -m llama-3.1-8b -g l40s --tp $tp --batch "$1" --input "$2" --output 200
		[ "$rc" -eq 0 ] || fail "truth estimate"
		echo "l40s,llama-3.1-8b,$tp,prefill,$1,$2,0,$(jnum prefill.latency_ms)" >>"$TMP/m.csv"
		echo "l40s,llama-3.1-8b,$tp,decode,$(($1 * 8)),1,$(($2 + 100)),$(jnum decode.step_ms)" >>"$TMP/m2.csv"
	done
done
# decode rows need their own estimate at batch*8 (the decode step of that batch)
while IFS=, read -r g m tp ph b t ctx ms; do
	run --calibration "$TMP/truth.json" estimate -m llama-3.1-8b -g l40s --tp "$tp" --batch "$b" --input "$((ctx - 100))" --output 200
	echo "$g,$m,$tp,$ph,$b,$t,$ctx,$(jnum decode.step_ms)" >>"$TMP/m.csv"
done <"$TMP/m2.csv"
echo "a40,llama-3.1-8b,1,decode,1,1,100,9.9" >>"$TMP/m.csv"

run calibrate -m llama-3.1-8b -g l40s -o "$TMP/cal.json" "$TMP/m.csv"
expect_rc 0 "calibrate"
grep -q 'row for other GPUs or models skipped' "$TMP/err" && ok || fail "skipped row note"
python3 - "$TMP/cal.json" <<'PY' && ok || fail "fitted constants"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "hexplan.calibration"
f = d["gpus"]["l40s"]
assert abs(f["e_compute"] / 0.5 - 1) < 0.05, f
assert abs(f["e_mem"] / 0.7 - 1) < 0.05, f
assert abs(f["iter_overhead_ms"] / 5 - 1) < 0.05, f
assert d["fit"]["median_ape_after_pct"] < 1, d["fit"]
assert len(d["fit"]["per_point"]) == 16
PY

run --calibration "$TMP/truth.json" estimate -m llama-3.1-8b -g l40s --batch 2 --input 700
want=$(jnum prefill.latency_ms)
run --calibration "$TMP/cal.json" estimate -m llama-3.1-8b -g l40s --batch 2 --input 700
approx "$(jnum prefill.latency_ms)" "$want" 0.02 && ok || fail "calibrated estimate $(jnum prefill.latency_ms) vs $want"

run calibrate -m llama-3.1-8b -g l40s --format table "$TMP/m.csv"
expect_rc 0 "calibrate table"
expect_out '^error +median' "table error line"

run calibrate -m llama-3.1-8b -g h100-sxm "$TMP/m.csv"
expect_rc 1 "no rows for the gpu"
expect_err_line "^hexplan: error: $TMP/m.csv: no rows for gpu h100-sxm and model llama-3.1-8b$" "no rows message"

run calibrate -m llama-3.1-8b -g l40s
expect_rc 2 "no measurements file"

run calibrate -m llama-3.1-8b -g l40s -o "$TMP/cal.json" "$TMP/missing.csv"
expect_rc 1 "missing file"
[ -f "$TMP/cal.json" ] && ok || fail "a failed run removed the old output"

# --- calibrate --runs: end-to-end serving results ---------------------------
# tests/data/serving holds a vLLM bench serve result with per-request lengths
# (vllm-4rps), one with totals only (vllm-8rps, held out) and an
# inference-perf folder of two stages at TP 2, all "measured" as the
# catalog's H100 simulated a little slower (E2E x1.15, TTFT x1.3).
S=tests/data/serving
run calibrate --runs "$S/runs.json" -o "$TMP/scal.json"
expect_rc 0 "calibrate --runs"
grep -q 'steady stages fitted, mean error E2E' "$TMP/err" && ok || fail "--runs -o summary line"
python3 - "$TMP/scal.json" <<'PY' && ok || fail "serving calibration contents"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "hexplan.calibration"
f = d["gpus"]["h100-sxm"]
# tp 2 (all-reduce) and un-cached prompts (e_compute) make those keys fittable
assert set(f) == {"e_mem", "iter_overhead_ms", "graph_floor_us", "request_overhead_ms",
                  "allreduce_latency_us", "e_compute"}, f
fit = d["fit"]
assert fit["source"] == "serving"
r = fit["fitted_runs"]
assert r["steady_stages"] == 3, r
assert r["e2e_error_pct"] < r["catalog_e2e_error_pct"], r
assert r["ttft_error_pct"] < r["catalog_ttft_error_pct"] and r["ttft_error_pct"] < 10, r
assert [x["run"] for x in fit["per_run"]] == ["vllm-4rps", "iperf-tp2"]
assert [(x["run"], x["stage"]) for x in fit["per_stage"]] == [
    ("vllm-4rps", 0), ("iperf-tp2", 0), ("iperf-tp2", 1)]
assert "holdout_runs" not in fit
PY
run --calibration "$TMP/scal.json" estimate -m llama-3.1-8b -g h100-sxm
expect_rc 0 "the serving calibration loads"

# deterministic: the same runs give the same file
run calibrate --runs "$S/runs.json"
expect_rc 0 "calibrate --runs to stdout"
python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(a != b)' \
	"$TMP/scal.json" "$TMP/out" && ok || fail "two fits differ"

run calibrate --runs "$S/runs.json" --holdout "$S/holdout.json" --format table
expect_rc 0 "calibrate --holdout table"
expect_out '^vllm-8rps +0 holdout ' "holdout stage row"
expect_out '^holdout +1 ' "holdout summary row"
expect_out '^fit +3 ' "fit summary row"
run calibrate --runs "$S/runs.json" --holdout "$S/holdout.json"
expect_rc 0 "calibrate --holdout json"
[ "$(jnum fit.holdout_runs.steady_stages)" = 1 ] && ok || fail "holdout stage count"
python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 10)' "$(jnum fit.holdout_runs.e2e_error_pct)" &&
	ok || fail "holdout E2E error $(jnum fit.holdout_runs.e2e_error_pct)"

# strict reading: the runs file and the results name the file and the place
cp -r "$S" "$TMP/s"
python3 - "$TMP/s" <<'PY'
import copy, json, os, shutil, sys
t = sys.argv[1]
d = json.load(open(os.path.join(t, "runs.json")))
def w(name, f):
    x = copy.deepcopy(d)
    f(x["runs"])
    json.dump(x, open(os.path.join(t, name), "w"))
w("missing.json", lambda r: r[0].pop("tp"))
w("type.json", lambda r: r[1].__setitem__("tp", "two"))
w("format.json", lambda r: r[0].__setitem__("format", "genai-perf"))
w("unknown.json", lambda r: r[0].__setitem__("rate", 4))
w("noresult.json", lambda r: r[0].__setitem__("result", "nope.json"))
w("badvllm.json", lambda r: r[0].__setitem__("result", "bad-vllm.json"))
w("badiperf.json", lambda r: r[1].__setitem__("result", "bad-iperf"))
w("stages.json", lambda r: r[1].__setitem__("stages", [{"rate_rps": 3, "duration_s": 20}]))
w("norate.json", lambda r: r[0].__setitem__("result", "inf.json"))
v = json.load(open(os.path.join(t, "vllm-8rps.json")))
del v["mean_ttft_ms"]
json.dump(v, open(os.path.join(t, "bad-vllm.json"), "w"))
v = json.load(open(os.path.join(t, "vllm-8rps.json")))
v["request_rate"] = "inf"
json.dump(v, open(os.path.join(t, "inf.json"), "w"))
shutil.copytree(os.path.join(t, "iperf-tp2"), os.path.join(t, "bad-iperf"))
p = os.path.join(t, "bad-iperf", "stage_1_lifecycle_metrics.json")
s = json.load(open(p))
s["successes"]["latency"]["time_to_first_token"]["mean"] = "fast"
json.dump(s, open(p, "w"))
PY
bad_runs() { # FILE PATTERN DESCRIPTION
	run calibrate --runs "$TMP/s/$1"
	expect_rc 1 "$3"
	expect_err_line "$2" "$3 message"
}
bad_runs missing.json "^hexplan: error: $TMP/s/missing.json: /runs/0: missing required key \"tp\"$" "missing key"
bad_runs type.json "^hexplan: error: $TMP/s/type.json: /runs/1/tp: must be an integer" "wrong type"
bad_runs format.json "^hexplan: error: $TMP/s/format.json: /runs/0/format: must be one of vllm-bench, inference-perf" "unknown format"
bad_runs unknown.json "^hexplan: error: $TMP/s/unknown.json: /runs/0/rate: unknown key$" "unknown key"
bad_runs noresult.json "^hexplan: error: $TMP/s/noresult.json: /runs/0/result: no result file $TMP/s/nope.json$" "missing result file"
bad_runs badvllm.json "^hexplan: error: $TMP/s/bad-vllm.json: missing required key \"mean_ttft_ms\"$" "vllm result missing key"
bad_runs badiperf.json "^hexplan: error: $TMP/s/bad-iperf/stage_1_lifecycle_metrics.json: /successes/latency/time_to_first_token/mean: must be a non-negative number$" "inference-perf wrong type"
bad_runs stages.json "^hexplan: error: $TMP/s/stages.json: /runs/1/stages: gives 1 stages, the result has 2$" "stage count"
bad_runs norate.json "^hexplan: error: $TMP/s/norate.json: /runs/0: missing required key \"rate_rps\"" "no finite rate"

# ---- a fit the rows cannot identify is refused, naming the file (issue
# 20: one row used to write kernel_floor_us 8.6e-51); repeated rows count
# once.
H=gpu,model,tp,phase,batch,tokens,context,ms
printf '%s\n%s\n%s\n' $H l40s,llama-3.1-8b,1,decode,8,1,300,12.5 \
	l40s,llama-3.1-8b,1,decode,8,1,300,12.6 >"$TMP/one.csv"
run calibrate -m llama-3.1-8b -g l40s -o "$TMP/under.json" "$TMP/one.csv"
expect_rc 1 "one measurement"
expect_err_line "^hexplan: error: $TMP/one.csv: 1 distinct measurement cannot identify the 4 fitted constants \(e_compute, e_mem, kernel_floor_us, iter_overhead_ms\): give at least 4 rows of different shapes\$" "one measurement message"
if [ -e "$TMP/under.json" ]; then fail "one measurement: a calibration was written"; else ok; fi
{
	echo $H
	for t in 16 64 256 1024; do echo "l40s,llama-3.1-8b,1,linear,1,$t,0,0.$t"; done
	echo "l40s,llama-3.1-8b,1,prefill,1,512,0,30"
} >"$TMP/phase.csv"
run calibrate -m llama-3.1-8b -g l40s "$TMP/phase.csv"
expect_rc 1 "one prefill row"
expect_err_line "^hexplan: error: $TMP/phase.csv: 1 distinct prefill or decode measurement cannot identify the 2 constants only they fit \(e_attn, iter_overhead_ms\): give at least 2\$" "one prefill row message"

# ---- the calibration reader enforces each key's physical bounds
calib_bound() { # KEY VALUE RANGE
	printf '{"schema": "hexplan.calibration", "version": 1, "gpus": {"l40s": {"%s": %s}}}\n' "$1" "$2" >"$TMP/bound.json"
	run --calibration "$TMP/bound.json" estimate -m llama-3.1-8b -g l40s
	expect_rc 1 "$1 $2"
	expect_err_line "^hexplan: error: $TMP/bound.json: /gpus/l40s/$1: must be between $3, not $2\$" "$1 $2 message"
}
calib_bound kernel_floor_us 8.6e-51 "0.1 and 1000"
calib_bound kernel_floor_us 2000 "0.1 and 1000"
calib_bound e_compute 0.001 "0.01 and 1"
calib_bound e_moe 1.5 "0 and 1"
calib_bound iter_overhead_ms 20000 "0 and 10000"
calib_bound seq_overhead_us -1 "0 and 10000"

# --prior: a heavy prior keeps the catalog's constants; the weight is in the
# file; a negative weight or one without --runs is a usage error
run profiles show gpu h100-sxm --format json
cp "$TMP/out" "$TMP/h100.json"
run calibrate --runs "$S/runs.json" --prior 10000
expect_rc 0 "calibrate --prior"
python3 - "$TMP/out" "$TMP/h100.json" <<'PY' && ok || fail "a heavy prior keeps the catalog's values"
import json, sys
d = json.load(open(sys.argv[1]))
g = json.load(open(sys.argv[2]))
g = g.get("gpu", g)
assert d["fit"]["prior"] == 10000, d["fit"]["prior"]
f = d["gpus"]["h100-sxm"]
for k, v in f.items():
    assert abs(v / g[k] - 1) < 0.02, (k, v, g[k])
PY
run calibrate --runs "$S/runs.json" --prior -1
expect_rc 2 "--prior below 0"
run calibrate -m llama-3.1-8b -g l40s --prior 1 "$TMP/m.csv"
expect_rc 2 "--prior without --runs"

# --keys: only the keys named move; unknown or repeated keys are usage errors
run calibrate --runs "$S/runs.json" --keys iter_overhead_ms,request_overhead_ms
expect_rc 0 "calibrate --keys"
python3 - "$TMP/out" <<'PY' && ok || fail "--keys fits the keys named"
import json, sys
f = json.load(open(sys.argv[1]))["gpus"]["h100-sxm"]
assert set(f) == {"iter_overhead_ms", "request_overhead_ms"}, f
PY
run calibrate --runs "$S/runs.json" --keys iter_overhead_ms,bogus
expect_rc 2 "--keys with an unknown key"
grep -q '^hexplan: error: --keys: "bogus" is not a fittable key (they are: e_compute, e_mem, ' "$TMP/err" && ok || fail "unknown key named"
run calibrate --runs "$S/runs.json" --keys e_mem,e_mem
expect_rc 2 "--keys with a key twice"
run calibrate -m llama-3.1-8b -g l40s --keys e_mem "$TMP/m.csv"
expect_rc 2 "--keys without --runs"

run calibrate --holdout "$S/holdout.json"
expect_rc 2 "--holdout without --runs"
run calibrate --runs "$S/runs.json" -m llama-3.1-8b
expect_rc 2 "--runs with -m"

finish
