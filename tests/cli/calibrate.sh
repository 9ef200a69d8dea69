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

finish
