#!/bin/sh
# bad_inputs.sh: every malformed input under tests/data/bad/ (one defect per
# file, named for it) is rejected with the right exit status, nothing on
# stdout and exactly one precise line on stderr:
#   syntax errors  hexplan: error: PATH:LINE:COL: message
#   bad values     hexplan: error: PATH: /json/pointer: message
#   CSV errors     hexplan: error: PATH:LINE: message   (PATH: ... for a file)
# Also the "does not fit" exit 3 of estimate and a few usage errors (exit 2).
# Run by hand from anywhere: sh tests/cli/bad_inputs.sh
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

B=tests/data/bad
: >"$TMP/seen"

# re STRING: STRING quoted for use in an extended regular expression.
re() {
	printf '%s' "$1" | sed 's/[][\\.^$*+?(){}|]/\\&/g'
}

# no_stdout NAME: the last run printed nothing on stdout.
no_stdout() {
	if [ ! -s "$TMP/out" ]; then ok; else fail "$1: stdout not empty"; fi
}

# bad_file RC NAME TAIL: the last run (which read $B/NAME) exited RC, printed
# nothing on stdout and one stderr line "hexplan: error: $B/NAME" + TAIL
# (an ERE, anchored at the end).
bad_file() {
	echo "$2" >>"$TMP/seen"
	expect_rc "$1" "$2"
	expect_err_line "^hexplan: error: $(re "$B/$2")$3\$" "$2"
	no_stdout "$2"
}

# v OPTION NAME TAIL: hexplan validate OPTION $B/NAME fails with exit 1.
v() {
	run validate "$1" "$B/$2"
	bad_file 1 "$2" "$3"
}

# cal NAME TAIL: a bad --calibration file.
cal() {
	run --calibration "$B/$1" validate -m llama-3.1-8b
	bad_file 1 "$1" "$2"
}

# usage NAME PATTERN ARGS...: exit 2, nothing on stdout, the first stderr line
# matches PATTERN and any further lines are the command's usage.
usage() {
	name=$1 pat=$2
	shift 2
	run "$@"
	expect_rc 2 "$name"
	if head -n 1 "$TMP/err" | grep -Eq -- "$pat"; then
		ok
	else
		fail "$name: first stderr line does not match /$pat/"
	fi
	if sed 1d "$TMP/err" | grep -Evq '^(usage: |       )hexplan '; then
		fail "$name: stderr has lines other than the error and the usage"
	else
		ok
	fi
	no_stdout "$name"
}

# ---- cluster: JSON syntax (line:column as jansson gives them) -------------
v -c cluster-truncated.json ":5:1: '\]' expected near end of file"
v -c cluster-duplicate-key.json ":4:11: duplicate object key near '\"version\"'"
v -c cluster-nan.json ":3:52: invalid token near 'NaN'"
v -c cluster-trailing-comma.json ":3:52: string or '\}' expected near '\}'"
v -c cluster-trailing-garbage.json ":5:1: end of file expected near 'x'"
v -c cluster-empty-file.json ":1:1: '\[' or '\{' expected near end of file"
# jansson does not skip a UTF-8 byte order mark; the three bytes are quoted.
v -c cluster-bom.json ":1:1: a UTF-8 byte order mark is not allowed at the start of JSON text"
v -c cluster-nul-byte.json ":3:24: NUL byte in JSON text"

# ---- cluster: values (JSON pointer) ----------------------------------------
v -c cluster-top-level-array.json ": must be an object, not an array"
v -c cluster-unknown-key.json ": /colour: unknown key"
v -c cluster-no-version.json ": missing required key \"version\""
v -c cluster-version-2.json ": /version: unsupported version 2 \(this hexplan reads version 1\)"
v -c cluster-empty.json ": a cluster needs at least one node or offer"
v -c cluster-string-count.json ": /nodes/0/count: must be an integer, not a string"
v -c cluster-fractional-count.json ": /nodes/0/count: must be an integer, not a number"
v -c cluster-negative-count.json ": /nodes/1/count: must be a positive integer, not -2"
v -c cluster-count-too-big.json ": /nodes/0/count: must be between 1 and 4096, not 5000"
v -c cluster-string-too-long.json ": /nodes/0/name: is longer than 63 characters"
v -c cluster-duplicate-node.json ": /nodes/1/name: duplicate node name \"n0\""
v -c cluster-unknown-gpu.json ": /nodes/0/gpu: unknown GPU \"h900\" \(see 'hexplan profiles list'\)"
v -c cluster-gpu-override-bad-field.json ": /nodes/0/gpu/mem_gib: must be between 0\.001 and 1e\+07, not -24"
v -c cluster-zero-bandwidth.json ": /links/0/bw_gbps: must be a positive number, not 0"
v -c cluster-unknown-link-node.json ": /links/0/b: unknown node \"n9\""
v -c cluster-link-self.json ": /links/0/b: a link must join two different nodes"
v -c cluster-negative-latency.json ": /defaults/same_region/latency_ms: must be between 0 and 1e\+06, not -1"
v -c cluster-offer-negative-max.json ": /offers/0/max_count: must be between 0 and 65536, not -1"

# ---- workload ---------------------------------------------------------------
v -w workload-missing-colon.json ":3:14: ':' expected near '5'"
v -w workload-missing-slo.json ": missing required key \"slo\""
v -w workload-negative-rate.json ": /rate_rps: must be a positive number, not -5"
v -w workload-bad-process.json ": /arrival/process: must be one of poisson, gamma, not \"uniform\""
v -w workload-poisson-cv.json ": /arrival/cv: a poisson process has cv 1 \(use \"gamma\"\)"
v -w workload-attainment-percent.json ": /slo/attainment: must be between 0\.01 and 1, not 99"
v -w workload-mean-below-p50.json ": /prompt_tokens/mean: must be at least p50 \(1020\) for a lognormal"
v -w workload-dist-and-buckets.json ": /prompt_tokens: give exactly one of \"dist\", \"buckets\" or \"trace\""
v -w workload-bucket-zero-weight.json ": /prompt_tokens/buckets/1/1: weight must be a positive number"
v -w workload-shares-not-one.json ": /classes: shares must sum to 1, not 0\.9"
v -w workload-both-lengths-and-classes.json ": /classes: give lengths per class or for the whole workload, not both"
# A trace named by a workload resolves next to the workload; its own error
# (file and line) follows the pointer.
v -w workload-stages-not-array.json ": /stages: must be a non-empty array of stages"
v -w workload-stage-no-duration.json ": /stages/1: missing required key \"duration_s\""
v -w workload-stages-all-zero.json ": /stages: no stage has a positive rate"
v -w workload-stage-unknown-key.json ": /stages/0/users: unknown key"
v -w workload-prefix-fractional-groups.json ": /shared_prefix/groups: must be a whole number, not 2\.5"
v -w workload-prefix-no-groups.json ": /shared_prefix: missing required key \"groups\""
v -w workload-prefix-fractional-users.json ": /shared_prefix/users_per_group: must be between 1 and 1e\+06, not 0\.5"
v -w workload-trace-missing-file.json ": /prompt_tokens/trace: $(re "$B/no-such-trace.csv"): No such file or directory"
v -w workload-trace-bad-file.json ": /prompt_tokens/trace: $(re "$B/trace-negative-length.csv"):3: input_tokens must be an integer from 1 to 10000000, not \"-5\""
# The quality profile (cascade and route modes).
v -w workload-quality-score-above-100.json ": /quality/samples/0/scores/1: must be a score from 0 to 100"
v -w workload-quality-score-string.json ": /quality/samples/0/scores/1: must be a score from 0 to 100"
v -w workload-quality-scores-count.json ": /quality/samples/0/scores: 1 scores for 2 models"
v -w workload-quality-duplicate-model.json ": /quality/models/1: \"qwen3-8b\" is listed twice"
v -w workload-quality-floor-above-100.json ": /quality/floor: must be between 0 and 100, not 120"
v -w workload-quality-no-samples.json ": /quality/samples: must have at least 1 item"
v -w workload-quality-zero-prompt.json ": /quality/samples/0/prompt_tokens: must be a positive integer, not 0"
v -w workload-quality-unknown-key.json ": /quality/judge: unknown key"
# A model name is resolved when planning: the error names the file and pointer.
run plan --mode cascade -c examples/clusters/h100-node.json -w "$B/workload-quality-unknown-model.json"
bad_file 1 workload-quality-unknown-model.json ": /quality/models/1: unknown model \"no-such-model\" \(see 'hexplan profiles list', or give a config\.json path\)"

# ---- traces (CSV) -------------------------------------------------------------
v -t trace-empty-file.csv ": empty file: expected a CSV header"
v -t trace-empty.csv ": the trace has no requests"
v -t trace-bad-header.csv ":1: unknown trace header \(expected \"arrival_s,input_tokens,output_tokens\" or \"TIMESTAMP,ContextTokens,GeneratedTokens\"\)"
v -t trace-negative-length.csv ":3: input_tokens must be an integer from 1 to 10000000, not \"-5\""
v -t trace-fractional-tokens.csv ":3: input_tokens must be an integer from 1 to 10000000, not \"256\.5\""
v -t trace-negative-arrival.csv ":2: arrival_s must not be negative"
v -t trace-time-goes-back.csv ":4: arrivals must not go back in time \(0\.500000 after 1\.000000\)"
v -t trace-too-many-fields.csv ":3: expected 3 fields"
v -t trace-azure-bad-timestamp.csv ":3: bad TIMESTAMP \"2023-11-16 25:15:50\.1000000\""

# ---- measurements (CSV) ---------------------------------------------------------
v --measurements meas-bad-header.csv ":1: expected the header \"gpu,model,tp,phase,batch,tokens,context,ms\""
v --measurements meas-empty.csv ": no measurements"
v --measurements meas-bad-phase.csv ":3: phase must be prefill, decode or linear, not \"warmup\""
v --measurements meas-negative-ms.csv ":2: ms must be a positive number, not \"-1\.5\""
v --measurements meas-zero-tp.csv ":2: tp must be an integer from 1 to 1024, not \"0\""

# ---- Hugging Face config.json (-m PATH) ------------------------------------------
v -m hf-config-not-object.json ": must be an object \(a Hugging Face config\.json\)"
v -m hf-config-missing-layers.json ": missing required key \"num_hidden_layers\""
# The next three expect the documented behaviour (file + JSON pointer of the
# bad value); see the report: hf_int()'s error is dropped by its callers.
v -m hf-config-string-layers.json ": /num_hidden_layers: must be an integer of at least 1"
v -m hf-config-negative-kv-heads.json ": /num_key_value_heads: must be an integer of at least 1"
v -m hf-config-kv-heads-not-divisor.json ": /num_key_value_heads: .*must divide.*"

# ---- calibration (--calibration FILE) ----------------------------------------------
cal calibration-truncated.json ":6:1: '\}' expected near end of file"
cal calibration-bad-schema.json ": /schema: must be \"hexplan\.calibration\""
cal calibration-unknown-gpu.json ": /gpus/h900: unknown GPU \"h900\""
cal calibration-unknown-field.json ": /gpus/l4/mem_gib: unknown key"
cal calibration-out-of-range.json ": /gpus/l4/e_compute: must be between 0\.01 and 1, not 1\.5"
# Expects the documented behaviour (wrong types are errors); see the report.
cal calibration-model-not-string.json ": /model: must be a string"

# ---- catalog (--catalog DIR) ----------------------------------------------------------
run --catalog "$B/catalog-unknown-key" profiles list
bad_file 1 catalog-unknown-key "/models\.json: /models/0/arch/rope_theta: unknown key"

# ---- more loader defects (issue 11: every loader, each message asserted) ----
v -c cluster-defaults-unknown-key.json ": /defaults/wan: unknown key"
v -c cluster-duplicate-link.json ": /links/1: duplicate link between \"n1\" and \"n0\""
v -c cluster-link-unknown-key.json ": /links/0/mtu: unknown key"
v -c cluster-negative-nic.json ": /nodes/1/nic_gbps: must be a positive number, not -100"
v -c cluster-negative-price.json ": /nodes/0/usd_per_hour: must be between 0 and 1e\+06, not -1"
v -c cluster-offer-unknown-gpu.json ": /offers/0/gpu: unknown GPU \"h900\" \(see 'hexplan profiles list'\)"
v -c cluster-offer-zero-per-node.json ": /offers/0/gpus_per_node: must be a positive integer, not 0"
v -c cluster-region-not-string.json ": /nodes/0/region: must be a string, not an integer"
v -m hf-config-experts-per-tok-above-experts.json ": /num_experts_per_tok: must be between 1 and the 4 experts"
v -m hf-config-zero-vocab.json ": /vocab_size: must be an integer of at least 1"
v -m hf-config-mla-no-rope.json ": an MLA model needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim"
v -w workload-class-unknown-key.json ": /classes/0/colour: unknown key"
v -w workload-no-output-tokens.json ": missing required key \"output_tokens\""
v -w workload-percentile-above-100.json ": /slo/percentile: must be between 1 and 99\.99, not 101"
v -w workload-serving-zero-seqs.json ": /serving/max_seqs: must be between 1 and 1e\+06, not 0"
v -w workload-unknown-dist.json ": /prompt_tokens/dist: must be one of lognormal, not \"pareto\""
v -w workload-zero-rate.json ": /rate_rps: must be a positive number, not 0"

# ---- hostile inputs (issue 20): every class refused at its root, with the
# file and place; control characters from the input are written as \xNN.
v -c cluster-name-64-chars.json ": /nodes/0/name: is longer than 63 characters"
v -c cluster-gpu-control-chars.json ": /nodes/0/gpu: unknown GPU \"h\\\\x1b\\[31m100\" \\(see 'hexplan profiles list'\\)"
v -c cluster-nic-subnormal.json ": /nodes/0/nic_gbps: must be at least 1e-09, not 9\\.99989e-321"
v -c cluster-link-bw-tiny.json ": /links/0/bw_gbps: must be at least 1e-09, not 1e-10"
v -c cluster-link-no-bw.json ": /links/0: missing required key \"bw_gbps\""
v -c cluster-nodes-not-array.json ": /nodes: must be an array, not an object"
v -c cluster-node-not-object.json ": /nodes/1: must be an object, not a string"
v -c cluster-gpu-number.json ": /nodes/0/gpu: must be an object, not an integer"
v -c cluster-latency-huge.json ": /defaults/same_region/latency_ms: must be between 0 and 1e\\+06, not 1e\\+07"
v -c cluster-price-string.json ": /nodes/0/usd_per_hour: must be a number, not a string"
v -c cluster-offers-not-array.json ": /offers: must be an array, not an object"
v -c cluster-host-too-long.json ": /nodes/0/host: is longer than 255 characters"
v -c cluster-empty-name.json ": /nodes/0/name: must not be empty"
v -c cluster-name-nul-escape.json ":5:24: \\\\u0000 is not allowed without JSON_ALLOW_NUL near '\"n\\\\u0000x\"'"
v -c cluster-count-zero.json ": /nodes/0/count: must be a positive integer, not 0"
v -c cluster-count-bool.json ": /nodes/0/count: must be an integer, not a boolean"
v -c cluster-region-64-chars.json ": /nodes/0/region: is longer than 63 characters"
v -c cluster-link-bw-huge.json ": /links/0/bw_gbps: must be at most 1e\\+15, not 1e\\+16"
v -c cluster-gpu-mem-subnormal.json ": /nodes/0/gpu/mem_gib: must be between 0\\.001 and 1e\\+07, not 9\\.99989e-321"
v -c cluster-gpu-base-unknown.json ": /nodes/0/gpu/base: unknown GPU \"h900\" \\(see 'hexplan profiles list'\\)"
v -c cluster-count-overflow.json ":1:82: too big integer near '99999999999999999999'"
v -c cluster-real-overflow.json ":1:70: real number overflow near '1e400'"
v -c cluster-bad-utf8.json ":1:36: unable to decode byte 0xff near '\"n'"
v -c cluster-deep-nesting.json ":1:2072: maximum parsing depth reached near '\\['"
v -c cluster-control-char-in-string.json ":1:36: control character 0x7 near '\"n'"
v -c cluster-too-many-nodes.json ": /nodes: 4097 nodes are more than hexplan's limit of 4096"
v -w workload-gamma-cv-1e15.json ": /arrival/cv: must be between 0\\.01 and 20, not 1e\\+15"
v -w workload-gamma-cv-tiny.json ": /arrival/cv: must be between 0\\.01 and 20, not 0\\.001"
v -w workload-rate-subnormal.json ": /rate_rps: must be at least 1e-09, not 9\\.99989e-321"
v -w workload-rate-huge.json ": /rate_rps: must be at most 1e\\+15, not 1e\\+16"
v -w workload-ttft-zero.json ": /slo/ttft_ms: must be a positive number, not 0"
v -w workload-attainment-zero.json ": /slo/attainment: must be between 0\\.01 and 1, not 0"
v -w workload-buckets-empty.json ": /prompt_tokens/buckets: must have at least 1 item"
v -w workload-bucket-negative-tokens.json ": /prompt_tokens/buckets/0/0: tokens must be an integer from 1 to 10000000"
v -w workload-mean-string.json ": /prompt_tokens/mean: must be a number, not a string"
v -w workload-rate-negative-2.json ": /rate_rps: must be a positive number, not -1"
v -w workload-gamma-cv-negative.json ": /arrival/cv: must be between 0\\.01 and 20, not -2"
v -w workload-gamma-cv-string.json ": /arrival/cv: must be a number, not a string"
v -w workload-version-real.json ": /version: must be an integer, not a number"
v -w workload-tpot-subnormal.json ": /slo/tpot_ms: must be at least 1e-09, not 9\\.99989e-321"
v -w workload-no-ttft.json ": /slo: missing required key \"ttft_ms\""
v -w workload-max-tokens-huge.json ": /prompt_tokens/max: must be between 1 and 1e\\+07, not 1e\\+08"
v -t trace-nul-byte.csv ":3: a NUL byte \\(is it a text file\\?\\)"
v -t trace-hex-arrival.csv ":3: bad arrival_s \"0x1p3\""
v -t trace-inf-arrival.csv ":3: bad arrival_s \"inf\""
v -t trace-nan-arrival.csv ":2: bad arrival_s \"nan\""
v -t trace-arrival-1e17.csv ":3: an arrival 1e\\+17 s after the first is past hexplan's limit of 1e\\+09 s"
v -t trace-arrival-overflow.csv ":2: bad arrival_s \"1e400\""
v -t trace-azure-feb-31.csv ":3: bad TIMESTAMP \"2023-02-31 00:00:00\\.0\""
v -t trace-azure-feb-29-2023.csv ":3: bad TIMESTAMP \"2023-02-29 00:00:00\\.0\""
v -t trace-azure-april-31.csv ":2: bad TIMESTAMP \"2023-04-31 00:00:00\\.0\""
v -t trace-azure-month-13.csv ":2: bad TIMESTAMP \"2023-13-01 00:00:00\\.0\""
v -t trace-azure-year-1900.csv ":2: bad TIMESTAMP \"1900-01-01 00:00:00\\.0\""
v -t trace-azure-hex-seconds.csv ":2: bad TIMESTAMP \"2023-11-16 18:17:0x1p3\""
v -t trace-azure-exp-seconds.csv ":2: bad TIMESTAMP \"2023-11-16 18:17:1e1\""
v -t trace-azure-40-years.csv ":3: an arrival 1262304000 s after the first is past hexplan's limit of 1e\\+09 s"
v -t trace-tokens-above-limit.csv ":2: input_tokens must be an integer from 1 to 10000000, not \"10000001\""
v -t trace-tokens-overflow.csv ":2: input_tokens must be an integer from 1 to 10000000, not \"99999999999999999999\""
v -t trace-control-chars.csv ":2: field 1 holds a control character \\(\\\\x1b\\)"
v -t trace-two-fields.csv ":2: expected 3 fields"
v -t trace-zero-output.csv ":2: output_tokens must be an integer from 1 to 10000000, not \"0\""
v -t trace-hex-tokens.csv ":2: input_tokens must be an integer from 1 to 10000000, not \"0x200\""
v -t trace-nul-in-header.csv ":1: a NUL byte \\(is it a text file\\?\\)"
v -t trace-only-bom.csv ":1: unknown trace header \\(expected \"arrival_s,input_tokens,output_tokens\" or \"TIMESTAMP,ContextTokens,GeneratedTokens\"\\)"
v --measurements meas-nul-byte.csv ":2: a NUL byte \\(is it a text file\\?\\)"
v --measurements meas-hex-ms.csv ":2: ms must be a positive number, not \"0x1p1\""
v --measurements meas-inf-ms.csv ":2: ms must be a positive number, not \"inf\""
v --measurements meas-tp-huge.csv ":2: tp must be an integer from 1 to 1024, not \"2000\""
v --measurements meas-gpu-too-long.csv ":2: field 1 is longer than 64 characters"
v --measurements meas-seven-fields.csv ":2: expected 8 fields"
v --measurements meas-phase-control-char.csv ":2: field 4 holds a control character \\(\\\\x1b\\)"
v --measurements meas-batch-zero.csv ":2: batch must be an integer from 1 to 1000000, not \"0\""


# ---- plan files (plan -p reads a plan strictly) ----------------------------
# p NAME TAIL: hexplan plan -p $B/NAME fails with exit 1.
p() {
	run plan -p "$B/$1"
	bad_file 1 "$1" "$2"
}
p plan-arch-zero-layers.json ": /models/0/arch/layers: must be a positive integer, not 0"
p plan-bad-role.json ": /groups/0/role: must be one of aggregated, prefill, decode, not \"both\""
p plan-bad-schema.json ": /schema: must be \"hexplan\.plan\""
p plan-cascade-escalate.json ": /routing/cascade/0/escalate: must be between 0 and 1, not 1\.5"
p plan-duplicate-group.json ": /groups/3/name: duplicate group name \"g0\""
p plan-empty-groups.json ": /groups: must have at least 1 item"
p plan-gpu-profile-negative.json ": /gpus/0/mem_gib: must be between 0\.001 and 1e\+07, not -1"
p plan-gpu-ref-negative.json ": /groups/0/replicas/0/placement/0/0: must be a GPU as \"node:index\""
p plan-gpu-ref-no-index.json ": /groups/0/replicas/0/placement/0/0: must be a GPU as \"node:index\""
p plan-layers-three.json ": /groups/0/stages/0/layers: must be a pair \[first, last\) of layer indexes"
p plan-no-groups.json ": missing required key \"groups\""
p plan-placement-stages.json ": /groups/0/replicas/0/placement: has 2 stages, the group 1"
p plan-status-unknown.json ": /solver/status: must be one of optimal, gap_limit, work_limit, time_limit, heuristic, not \"done\""
p plan-tp-zero.json ": /groups/0/stages/0/tp: must be a positive integer, not 0"
p plan-unknown-key.json ": /colour: unknown key"
p plan-version-2.json ": /version: unsupported version 2 \(this hexplan reads version 1\)"
p plan-weight-string.json ": /routing/ingress/0/weight: must be a number, not a string"

# More of every loader's bounds, types and syntax (issue 20).
v -c cluster-links-not-array.json ": /links: must be an array, not an object"
v -c cluster-link-number.json ": /links/0: must be an object, not an integer"
v -c cluster-defaults-zero-bw.json ": /defaults/cross_region/bw_gbps: must be a positive number, not 0"
v -c cluster-offer-max-count-huge.json ": /offers/0/max_count: must be between 0 and 65536, not 65537"
v -c cluster-too-many-offers.json ": /offers: 257 offers are more than hexplan's limit of 256"
v -c cluster-offer-per-node-65.json ": /offers/0/gpus_per_node: must be between 1 and 64, not 65"
v -c cluster-offer-negative-price.json ": /offers/0/usd_per_hour: must be between 0 and 1e\\+06, not -1"
v -c cluster-count-4097.json ": /nodes/0/count: must be between 1 and 4096, not 4097"
v -c cluster-link-negative-latency.json ": /links/0/latency_ms: must be between 0 and 1e\\+06, not -0\\.5"
v -c cluster-host-empty.json ": /nodes/0/host: must not be empty"
v -c cluster-nic-huge.json ": /nodes/0/nic_gbps: must be at most 1e\\+15, not 1e\\+16"
v -c cluster-region-empty.json ": /nodes/0/region: must not be empty"
v -c cluster-name-number.json ": /nodes/0/name: must be a string, not an integer"
v -c cluster-link-bw-string.json ": /links/0/bw_gbps: must be a number, not a string"
v -c cluster-version-string.json ": /version: must be an integer, not a string"
v -c cluster-gpu-override-unknown-key.json ": /nodes/0/gpu/tflops: unknown key"
v -w workload-class-negative-share.json ": /classes/0/share: must be between 1e-09 and 1, not -0\\.5"
v -w workload-bucket-weight-string.json ": /prompt_tokens/buckets/0: must be a pair \\[tokens, weight\\]"
v -w workload-p50-zero.json ": /prompt_tokens/p50: must be between 1 and 1e\\+07, not 0"
v -w workload-output-max-huge.json ": /output_tokens/max: must be between 1 and 1e\\+07, not 1e\\+08"
v -w workload-percentile-half.json ": /slo/percentile: must be between 1 and 99\\.99, not 0\\.5"
v -w workload-rate-string.json ": /rate_rps: must be a number, not a string"
v -w workload-process-number.json ": /arrival/process: must be a string, not an integer"
v -w workload-ttft-huge.json ": /slo/ttft_ms: must be at most 1e\\+15, not 1e\\+16"
v -w workload-rate-bool.json ": /rate_rps: must be a number, not a boolean"
v -w workload-bucket-three-items.json ": /prompt_tokens/buckets/0: must be a pair \\[tokens, weight\\]"
v -w workload-bucket-fractional-tokens.json ": /prompt_tokens/buckets/0/0: tokens must be an integer from 1 to 10000000"
v -w workload-bucket-tokens-huge.json ": /prompt_tokens/buckets/0/0: tokens must be an integer from 1 to 10000000"
v -t trace-header-extra-field.csv ":1: unknown trace header \\(expected \"arrival_s,input_tokens,output_tokens\" or \"TIMESTAMP,ContextTokens,GeneratedTokens\"\\)"
v -t trace-azure-minute-60.csv ":2: bad TIMESTAMP \"2023-11-16 18:60:00\\.0\""
v -t trace-azure-hour-24.csv ":2: bad TIMESTAMP \"2023-11-16 24:00:00\\.0\""
v -t trace-azure-no-time.csv ":2: bad TIMESTAMP \"2023-11-16\""
v -t trace-azure-negative-tokens.csv ":2: ContextTokens must be an integer from 1 to 10000000, not \"-512\""
v -t trace-arrival-dangling-exponent.csv ":2: bad arrival_s \"1e\""
v -t trace-arrival-two-points.csv ":2: bad arrival_s \"1\\.\\.2\""
v -t trace-arrival-empty.csv ":2: bad arrival_s \"\""
v -t trace-arrival-infinity-word.csv ":2: bad arrival_s \"infinity\""
v -t trace-nul-after-crlf.csv ":3: a NUL byte \\(is it a text file\\?\\)"
v -t trace-output-overflow.csv ":2: output_tokens must be an integer from 1 to 10000000, not \"-99999999999999999999\""
v --measurements meas-context-huge.csv ":2: context must be an integer from 0 to 10000000, not \"10000001\""
v --measurements meas-tokens-zero.csv ":2: tokens must be an integer from 1 to 10000000, not \"0\""
v --measurements meas-model-empty.csv ":2: gpu and model must be names"
v --measurements meas-ms-zero.csv ":2: ms must be a positive number, not \"0\""
v --measurements meas-ms-nan.csv ":2: ms must be a positive number, not \"nan\""
v --measurements meas-tp-hex.csv ":2: tp must be an integer from 1 to 1024, not \"0x2\""
v --measurements meas-header-only.csv ": no measurements"
v --measurements meas-ms-huge-exponent.csv ":2: ms must be a positive number, not \"1e999\""


# ---- issue 20: layer costs, plans, and the simulator's refusals of a plan
# lc NAME TAIL: plan --mode pipeline --layer-costs $B/NAME fails with exit 1.
lc() {
	run plan -c examples/clusters/helix-24.json -w examples/workloads/pipeline.json --mode pipeline --layer-costs "$B/$1"
	bad_file 1 "$1" "$2"
}
lc layers-nul-byte.csv ":3: a NUL byte \(is it a text file\?\)"
lc layers-hex-ms.csv ":2: ms must be a positive number, not \"0x1p3\""
lc layers-duplicate-row.csv ":4: a second row for t4, tp 1, decode, 1 tokens \(first at line 2\)"
lc layers-inf-tokens.csv ":2: tokens must be a number from 1 to 1e7, not \"inf\""
lc layers-context-huge.csv ":2: context must be a number from 0 to 1e7, not \"1e8\""
lc layers-bad-phase.csv ":2: phase must be decode or prefill, not \"warmup\""
p plan-negative-gap.json ": /solver/gap: must be between 0 and 1e\+300, not -1\.97e-07"
p plan-kv-link-64-chars.json ": /routing/kv/0/link: is longer than 63 characters"
p plan-weight-huge.json ": /routing/ingress/0/weight: must be between -1e\+12 and 1e\+12, not 1e\+13"
p plan-duplicate-group-late.json ": /groups/1/name: duplicate group name \"g0\""
p plan-class-share-above-1.json ": /routing/classes/1/share: must be between 0 and 1, not 1\.5"
p plan-class-duplicate-late.json ": /routing/classes/6/name: duplicate class name \"c3\""
# simulate names the plan file and the JSON pointer of what it refuses.
for c in "bad-kv-replica.json|/routing/kv/1/to: unknown replica \"g1r7\"" \
	"bad-layers.json|/groups/2/stages: stage 1 must hold layers from 40 on" \
	"bad-memory.json|/groups/3/replicas/0: the model does not fit its GPUs" \
	"bad-tp-heads.json|/groups/0/stages: tensor parallel degree 3 must divide the 64 attention heads of llama-3.1-70b" \
	"bad-undeclared-gpu.json|/groups/2/stages/0/gpu: unknown GPU \"l40s\"" \
	"bad-undeclared-model.json|/groups/1/model: unknown model \"llama-3.1-8b\""; do
	f=${c%%|*} msg=${c#*|}
	run simulate -p "tests/data/plans/$f" -w examples/workloads/chat.json --requests 50
	expect_rc 1 "simulate $f"
	expect_err_line "^hexplan: error: $(re "tests/data/plans/$f: $msg")\$" "simulate $f"
	no_stdout "simulate $f"
done

# ---- hostile inputs, third round (issue 20): every loader and command, one
# defect per file, each refused with its file and place.
v -c cluster-iface-16-chars.json ": /nodes/0/interface: must be a network interface name of 1 to 15 characters"
v -c cluster-iface-leading-dash.json ": /nodes/0/interface: \"-eth0\" is not a network interface name \(letters, digits, '_', '\.', ':' and '-', not starting with '-'\)"
v -c cluster-iface-space.json ": /nodes/0/interface: \"eth 0\" is not a network interface name \(letters, digits, '_', '\.', ':' and '-', not starting with '-'\)"
v -c cluster-iface-number.json ": /nodes/0/interface: must be a string"
v -c cluster-iface-empty.json ": /nodes/0/interface: must be a network interface name of 1 to 15 characters"
v -c cluster-iface-escape-char.json ": /nodes/0/interface: \"eth\\\\x1b0\" is not a network interface name \(letters, digits, '_', '\.', ':' and '-', not starting with '-'\)"
v -c cluster-iface-slash.json ": /nodes/0/interface: \"eth0/1\" is not a network interface name \(letters, digits, '_', '\.', ':' and '-', not starting with '-'\)"
v -c cluster-node-no-name.json ": /nodes/0: missing required key \"name\""
v -c cluster-node-no-gpu.json ": /nodes/0: missing required key \"gpu\""
v -c cluster-gpu-null.json ": /nodes/0/gpu: must be an object, not null"
v -c cluster-gpu-empty-string.json ": /nodes/0/gpu: unknown GPU \"\" \(see 'hexplan profiles list'\)"
v -c cluster-gpu-override-no-base.json ": /nodes/0/gpu: missing required key \"name\""
v -c cluster-gpu-override-bw-string.json ": /nodes/0/gpu/mem_bw_gb_s: must be a number, not a string"
v -c cluster-gpu-override-tflops-zero.json ": /nodes/0/gpu/tflops_bf16: must be between 0\.001 and 1e\+07, not 0"
v -c cluster-gpu-override-e-mem-above-1.json ": /nodes/0/gpu/e_mem: must be between 0\.01 and 1, not 1\.5"
v -c cluster-gpu-override-price-negative.json ": /nodes/0/gpu/usd_per_hour: must be between 0 and 1e\+07, not -1"
v -c cluster-gpu-override-array.json ": /nodes/0/gpu: must be an object, not an array"
v -c cluster-count-real-whole.json ": /nodes/0/count: must be an integer, not a number"
v -c cluster-count-null.json ": /nodes/0/count: must be an integer, not null"
v -c cluster-nic-zero.json ": /nodes/0/nic_gbps: must be a positive number, not 0"
v -c cluster-price-huge.json ": /nodes/0/usd_per_hour: must be between 0 and 1e\+06, not 1e\+07"
v -c cluster-link-a-missing.json ": /links/0: missing required key \"a\""
v -c cluster-link-a-number.json ": /links/0/a: must be a string, not an integer"
v -c cluster-link-latency-string.json ": /links/0/latency_ms: must be a number, not a string"
v -c cluster-link-latency-huge.json ": /links/0/latency_ms: must be between 0 and 1e\+06, not 2e\+06"
v -c cluster-link-unknown-a.json ": /links/0/a: unknown node \"n\\\\x1b\\[1m\""
v -c cluster-link-bw-negative.json ": /links/0/bw_gbps: must be a positive number, not -100"
v -c cluster-defaults-not-object.json ": /defaults: must be an object, not an integer"
v -c cluster-defaults-same-region-array.json ": /defaults/same_region: must be an object, not an array"
v -c cluster-defaults-no-bw.json ": /defaults/cross_region: missing required key \"bw_gbps\""
v -c cluster-defaults-unknown-field.json ": /defaults/same_region/jitter_ms: unknown key"
v -c cluster-offer-no-gpu.json ": /offers/0: missing required key \"gpu\""
v -c cluster-offer-no-max-count.json ": /offers/0: missing required key \"max_count\""
v -c cluster-offer-region-64-chars.json ": /offers/0/region: is longer than 63 characters"
v -c cluster-offer-unknown-key.json ": /offers/0/spot_price: unknown key"
v -c cluster-offer-not-object.json ": /offers/0: must be an object, not a string"
v -c cluster-offer-max-count-string.json ": /offers/0/max_count: must be an integer, not a string"
v -c cluster-offer-price-huge.json ": /offers/0/usd_per_hour: must be between 0 and 1e\+06, not 2e\+06"
v -c cluster-gpus-over-limit.json ": /nodes: 69632 GPUs are more than hexplan's limit of 65536 per cluster"
v -c cluster-version-0.json ": /version: unsupported version 0 \(this hexplan reads version 1\)"
v -c cluster-version-negative.json ": /version: must be between 0 and 1000000, not -1"
v -c cluster-top-level-string.json ":1:9: '\[' or '\{' expected near '\"cluster\"'"
v -c cluster-top-level-null.json ":1:4: '\[' or '\{' expected near 'null'"
v -c cluster-single-quotes.json ":1:2: string or '\}' expected near '''"
v -c cluster-line-comment.json ":2:3: string or '\}' expected near '/'"
v -c cluster-utf16le.json ":1:4: NUL byte in JSON text"
v -c cluster-lone-surrogate.json ":1:43: invalid Unicode '\\\\uD800' near '\"n\\\\ud800\"'"
v -c cluster-overlong-utf8.json ":1:36: unable to decode byte 0xc0 near '\"n'"
v -c cluster-bad-escape.json ":1:38: invalid escape near '\"n\\\\q'"
v -c cluster-unquoted-key.json ":1:8: string or '\}' expected near 'version'"
v -c cluster-leading-zero.json ":1:13: invalid token near '0'"
v -c cluster-plus-number.json ":1:13: invalid token near '\+'"
v -c cluster-hex-number.json ":1:64: '\}' expected near 'x'"
v -c cluster-infinity-word.json ":1:73: invalid token near 'Infinity'"
v -c cluster-two-documents.json ":2:1: end of file expected near '\{'"
v -c cluster-only-whitespace.json ":3:1: '\[' or '\{' expected near end of file"
v -w workload-top-level-array.json ": must be an object, not an array"
v -w workload-unknown-top-key.json ": /priority: unknown key"
v -w workload-no-version.json ": missing required key \"version\""
v -w workload-model-number.json ": /model: must be a string, not an integer"
v -w workload-arrival-string.json ": /arrival: must be an object, not a string"
v -w workload-arrival-unknown-key.json ": /arrival/burst: unknown key"
v -w workload-gamma-cv-21.json ": /arrival/cv: must be between 0\.01 and 20, not 21"
v -w workload-gamma-cv-zero.json ": /arrival/cv: must be between 0\.01 and 20, not 0"
v -w workload-rate-negative-zero.json ": /rate_rps: must be a positive number, not -0"
v -w workload-no-rate.json ": missing required key \"rate_rps\""
v -w workload-prompt-not-object.json ": /prompt_tokens: must be an object, not an integer"
v -w workload-prompt-max-below-p50.json ": /prompt_tokens/max: must be at least p50 \(1020\)"
v -w workload-prompt-mean-huge.json ": /prompt_tokens/mean: must be between 1 and 1e\+07, not 1e\+08"
v -w workload-prompt-no-dist.json ": /prompt_tokens: give exactly one of \"dist\", \"buckets\" or \"trace\""
v -w workload-output-unknown-key.json ": /output_tokens/min: unknown key"
v -w workload-buckets-not-array.json ": /prompt_tokens/buckets: must be an array, not an object"
v -w workload-bucket-weight-negative.json ": /prompt_tokens/buckets/1/1: weight must be a positive number"
v -w workload-bucket-not-array.json ": /prompt_tokens/buckets/0: must be a pair \[tokens, weight\]"
v -w workload-trace-not-string.json ": /prompt_tokens/trace: must be a string, not an integer"
v -w workload-trace-empty-string.json ": /prompt_tokens/trace: must not be empty"
v -w workload-trace-directory.json ": /prompt_tokens/trace: tests/data/bad/\.: Is a directory"
v -w workload-trace-dev-zero.json ": /prompt_tokens/trace: /dev/zero:1: a NUL byte \(is it a text file\?\)"
v -w workload-slo-not-object.json ": /slo: must be an object, not an array"
v -w workload-slo-unknown-key.json ": /slo/e2e_ms: unknown key"
v -w workload-tpot-negative.json ": /slo/tpot_ms: must be a positive number, not -100"
v -w workload-attainment-string.json ": /slo/attainment: must be a number, not a string"
v -w workload-classes-empty.json ": /classes: must have at least 1 item"
v -w workload-class-no-share.json ": /classes/0: missing required key \"share\""
v -w workload-class-duplicate-name.json ": /classes/1/name: duplicate class name \"a\""
v -w workload-class-share-zero.json ": /classes/0/share: must be between 1e-09 and 1, not 0"
v -w workload-class-not-object.json ": /classes/0: must be an object, not a string"
v -w workload-class-no-prompt.json ": /classes/0: missing required key \"prompt_tokens\""
v -w workload-classes-65.json ": /classes: 65 classes are more than hexplan's limit of 64"
v -w workload-serving-unknown-key.json ": /serving/swap_gib: unknown key"
v -w workload-serving-mem-util-above-1.json ": /serving/gpu_memory_utilization: must be between 0\.05 and 1, not 1\.2"
v -w workload-serving-token-budget-zero.json ": /serving/token_budget: must be between 16 and 1e\+07, not 0"
v -w workload-serving-not-object.json ": /serving: must be an object, not an integer"
v -w workload-stage-negative-duration.json ": /stages/0/duration_s: must be between 1e-06 and 1e\+09, not -60"
v -w workload-stage-rate-string.json ": /stages/0/rate_rps: must be a number, not a string"
v -w workload-stage-not-object.json ": /stages/0: must be an object, not an array"
v -w workload-stage-duration-huge.json ": /stages/0/duration_s: must be between 1e-06 and 1e\+09, not 1e\+12"
v -w workload-prefix-tokens-negative.json ": /shared_prefix/tokens: must be between 0 and 1e\+07, not -512"
v -w workload-prefix-unknown-key.json ": /shared_prefix/hit_rate: unknown key"
v -w workload-prefix-not-object.json ": /shared_prefix: must be an object, not an integer"
v -w workload-prefix-groups-huge.json ": /shared_prefix/groups: must be between 1 and 1e\+06, not 1e\+12"
v -w workload-quality-models-not-array.json ": /quality/models: must be an array, not a string"
v -w workload-quality-floor-string.json ": /quality/floor: must be a number, not a string"
v -w workload-quality-sample-unknown-key.json ": /quality/samples/0/judge: unknown key"
v -w workload-quality-models-empty.json ": /quality/models: must have at least 1 item"
v -w workload-quality-model-number.json ": /quality/models/1: must be a model name or config\.json path"
v -w workload-quality-scores-not-array.json ": /quality/samples/0/scores: must be an array, not an integer"
v -w workload-quality-sample-no-output.json ": /quality/samples/0: missing required key \"output_tokens\""
v -w workload-quality-not-object.json ": /quality: must be an object, not an array"
v -t trace-crlf-header-only.csv ": the trace has no requests"
v -t trace-missing-column.csv ":1: unknown trace header \(expected \"arrival_s,input_tokens,output_tokens\" or \"TIMESTAMP,ContextTokens,GeneratedTokens\"\)"
v -t trace-trailing-comma.csv ":2: expected 3 fields"
v -t trace-quoted-field.csv ":2: bad arrival_s \"\"0\.5\"\""
v -t trace-tab-separated.csv ":1: unknown trace header \(expected \"arrival_s,input_tokens,output_tokens\" or \"TIMESTAMP,ContextTokens,GeneratedTokens\"\)"
v -t trace-cr-line-endings.csv ":1: unknown trace header \(expected \"arrival_s,input_tokens,output_tokens\" or \"TIMESTAMP,ContextTokens,GeneratedTokens\"\)"
v -t trace-utf16.csv ":1: a NUL byte \(is it a text file\?\)"
v -t trace-arrival-comma-decimal.csv ":2: expected 3 fields"
v -t trace-long-field.csv ":2: field 2 is longer than 64 characters"
v -t trace-arrival-1e9-plus.csv ":3: an arrival 1000000001 s after the first is past hexplan's limit of 1e\+09 s"
v -t trace-output-fractional.csv ":2: output_tokens must be an integer from 1 to 10000000, not \"128\.0\""
v -t trace-header-uppercase.csv ":1: unknown trace header \(expected \"arrival_s,input_tokens,output_tokens\" or \"TIMESTAMP,ContextTokens,GeneratedTokens\"\)"
v -t trace-header-spaces.csv ":1: unknown trace header \(expected \"arrival_s,input_tokens,output_tokens\" or \"TIMESTAMP,ContextTokens,GeneratedTokens\"\)"
v -t trace-azure-day-0.csv ":2: bad TIMESTAMP \"2023-11-00 00:00:00\.0\""
v -t trace-azure-second-61.csv ":2: bad TIMESTAMP \"2023-11-16 00:00:61\.0\""
v -t trace-azure-time-goes-back.csv ":3: arrivals must not go back in time \(-1\.000000 after 0\.000000\)"
v -t trace-azure-missing-column.csv ":1: unknown trace header \(expected \"arrival_s,input_tokens,output_tokens\" or \"TIMESTAMP,ContextTokens,GeneratedTokens\"\)"
v -t trace-azure-fractional-tokens.csv ":2: ContextTokens must be an integer from 1 to 10000000, not \"512\.5\""
v -t trace-azure-feb-30-leap.csv ":2: bad TIMESTAMP \"2024-02-30 00:00:00\.0\""
v -t trace-azure-slash-date.csv ":2: bad TIMESTAMP \"2023/11/16 00:00:05\.0\""
v -t trace-azure-iso-t.csv ":2: bad TIMESTAMP \"2023-11-16T00:00:05\.0\""
v -t trace-azure-zero-output.csv ":2: GeneratedTokens must be an integer from 1 to 10000000, not \"0\""
v -t trace-azure-crlf-header-only.csv ": the trace has no requests"
v -t trace-azure-negative-seconds.csv ":2: bad TIMESTAMP \"2023-11-16 00:00:-5\.0\""
v --measurements meas-batch-huge.csv ":2: batch must be an integer from 1 to 1000000, not \"1000001\""
v --measurements meas-context-negative.csv ":2: context must be an integer from 0 to 10000000, not \"-1\""
v --measurements meas-tokens-fractional.csv ":2: tokens must be an integer from 1 to 10000000, not \"512\.5\""
v --measurements meas-empty-file.csv ":1: expected the header \"gpu,model,tp,phase,batch,tokens,context,ms\""
v --measurements meas-nine-fields.csv ":2: expected 8 fields"
v --measurements meas-header-reordered.csv ":1: expected the header \"gpu,model,tp,phase,batch,tokens,context,ms\""
v --measurements meas-tp-negative.csv ":2: tp must be an integer from 1 to 1024, not \"-1\""
v --measurements meas-ms-huge.csv ":2: ms must be at most 1e9, not \"1e300\""
v --measurements meas-crlf-nul.csv ":2: a NUL byte \(is it a text file\?\)"
v --measurements meas-gpu-control-char.csv ":2: field 1 holds a control character \(\\\\x1b\)"
lc layers-empty-file.csv ":1: expected the header \"gpu,tp,phase,tokens,context,ms\""
lc layers-header-only.csv ": no rows"
lc layers-bad-header.csv ":1: expected the header \"gpu,tp,phase,tokens,context,ms\""
lc layers-tp-zero.csv ":2: tp must be an integer from 1 to 1024, not \"0\""
lc layers-ms-zero.csv ":2: ms must be a positive number, not \"0\""
lc layers-five-fields.csv ":2: expected 6 fields"
lc layers-phase-control-char.csv ":2: field 3 holds a control character \(\\\\x07\)"
lc layers-ms-negative.csv ":2: ms must be a positive number, not \"-8\""
lc layers-tokens-zero.csv ":2: tokens must be a number from 1 to 1e7, not \"0\""
lc layers-context-negative.csv ":2: context must be a number from 0 to 1e7, not \"-1\""
lc layers-tp-huge.csv ":2: tp must be an integer from 1 to 1024, not \"2000\""
cal calibration-top-level-array.json ": must be an object, not an array"
cal calibration-no-schema.json ": missing required key \"schema\""
cal calibration-version-2.json ": /version: unsupported version 2 \(this hexplan reads version 1\)"
cal calibration-gpus-not-object.json ": /gpus: must be an object"
cal calibration-gpu-not-object.json ": /gpus/l4: must be an object, not a number"
cal calibration-e-mem-zero.json ": /gpus/l4/e_mem: must be between 0\.01 and 1, not 0"
cal calibration-value-string.json ": /gpus/l4/e_compute: must be a number, not a string"
cal calibration-unknown-top-key.json ": /notes: unknown key"
cal calibration-nul-byte.json ":2:30: NUL byte in JSON text"
cal calibration-no-gpus.json ": missing required key \"gpus\""
cal calibration-gpu-control-name.json ": /gpus/l\\\\x1b4: unknown GPU \"l\\\\x1b4\""
cal calibration-overhead-huge.json ": /gpus/l4/iter_overhead_ms: must be between 0 and 10000, not 1e\+09"
# The workload's model is resolved when planning; the message names its key.
run plan -c examples/clusters/h100-node.json -w "$B/workload-model-unknown.json"
bad_file 1 workload-model-unknown.json ": /model: unknown model \"no-such-model\" \(see 'hexplan profiles list', or give a config\.json path\)"

# Plans: plan -p reads them strictly; check judges them against a cluster;
# simulate, export and replan refuse a plan that is not whole in itself
# (a route to no group, a negative weight, a placement of the wrong size).
# ck/sm/ex/rp NAME TAIL: check, simulate, export, replan of $B/NAME exit 1.
ck() {
	run check -p "$B/$1" -c examples/clusters/h100-node.json
	bad_file 1 "$1" "$2"
}
sm() {
	run simulate -p "$B/$1" -w examples/workloads/chat.json --requests 20
	bad_file 1 "$1" "$2"
}
ex() {
	run export -p "$B/$1" --to launch
	bad_file 1 "$1" "$2"
}
rp() {
	run replan -p "$B/$1" -c examples/clusters/h100-node.json
	bad_file 1 "$1" "$2"
}
p plan-duplicate-model.json ": /models/1: duplicate model \"llama-3\\.1-8b\""
p plan-duplicate-gpu-profile.json ": /gpus/1: duplicate GPU \"h100-sxm\""
p plan-tp-huge.json ": /groups/0/stages/0/tp: must be between 1 and 4096, not 100000"
p plan-gpu-index-huge.json ": /groups/0/replicas/0/placement/0/0: must be a GPU as \"node:index\""
p plan-inputs-not-object.json ": /inputs: must be an object, not a string"
p plan-models-empty.json ": /models: must have at least 1 item"
p plan-arch-heads-zero.json ": /models/0/arch/heads: must be a positive integer, not 0"
p plan-arch-kv-heads-not-dividing.json ": /models/0/arch: kv_heads \\(5\\) must divide heads \\(32\\)"
p plan-arch-layers-huge.json ": /models/0/arch/layers: must be between 1 and 100000000, not 1000000000"
p plan-gpu-profile-unknown-key.json ": /gpus/0/fp4: unknown key"
p plan-predicted-string.json ": /predicted/capacity_rps: must be a number, not a string"
p plan-solver-seed-negative.json ": /solver/seed: must be between 0 and 9223372036854775807, not -1"
p plan-replica-id-empty.json ": /groups/0/replicas/0/id: must not be empty"
p plan-top-level-array.json ": must be an object, not an array"
p plan-truncated.json ":64:25: string or '\\}' expected near end of file"
p plan-nul-byte.json ":4:16: NUL byte in JSON text"
p plan-weights-dtype-unknown.json ": /groups/0/weights: must be one of bf16, fp16, fp8, int4, not \"fp4\""
p plan-kv-dtype-unknown.json ": /groups/0/kv: must be one of bf16, fp16, fp8, not \"int2\""
p plan-stages-empty.json ": /groups/0/stages: must have at least 1 item"
p plan-stages-65.json ": /groups/0/stages: has more than 64 stages"
p plan-replicas-empty.json ": /groups/0/replicas: must have at least 1 item"
p plan-routing-not-object.json ": /routing: must be an object, not an array"
p plan-replica-no-placement.json ": /groups/0/replicas/0: missing required key \"placement\""
p plan-group-name-64-chars.json ": /groups/0/name: is longer than 47 characters"
p plan-mem-gib-huge.json ": /gpus/0/mem_gib: must be between 0\\.001 and 1e\\+07, not 1e\\+08"
p plan-gpu-ref-plus-index.json ": /groups/0/replicas/0/placement/0/0: must be a GPU as \"node:index\""
p plan-gpu-ref-space-index.json ": /groups/0/replicas/0/placement/0/0: must be a GPU as \"node:index\""
p plan-gpu-ref-number.json ": /groups/0/replicas/0/placement/0/0: must be a GPU as \"node:index\""
p plan-ingress-not-array.json ": /routing/ingress: must be an array, not an object"
p plan-schema-missing.json ": missing required key \"schema\""
p plan-predicted-negative.json ": /predicted/usd_per_hour: must be between 0 and 1e\\+15, not -5"
ck plan-group-unknown-model.json ": /groups/0/model: model \"llama-3\\.1-70b\" is not among the plan's models"
ck plan-layers-past-end.json ": /groups/0/stages/0/layers: the last stage ends at layer 40, not at the 32 layers of llama-3\\.1-8b"
ck plan-gpu-ref-unknown-node.json ": /groups/0/replicas/0/placement/0/0: GPU \"n9:0\": the cluster has no node \"n9\""
ck plan-gpu-ref-index-past-count.json ": /groups/0/replicas/0/placement/0/0: GPU \"n0:8\": node \"n0\" has 8 GPUs"
ck plan-gpu-used-twice.json ": /groups/0/replicas/1/placement/0/0: GPU \"n0:0\" is already used at /groups/0/replicas/0/placement/0/0"
ck plan-stage-layer-gap.json ": /groups/0/stages/1/layers: starts at layer 17, not 16 where the previous stage ends"
ck plan-gpu-ref-control-char.json ": /groups/0/replicas/0/placement/0/0: GPU \"n\\\\x1b0:0\": the cluster has no node \"n\\\\x1b0\""
ck plan-groups-huge-replica-count.json ": /groups/0/replicas/8/placement/0/0: GPU \"n0:0\" is already used at /groups/0/replicas/0/placement/0/0"
sm plan-duplicate-replica-id.json ": /groups/0/replicas/1/id: duplicate replica id \"g0r0\""
sm plan-placement-two-gpus-tp1.json ": /groups/0/replicas/0/placement/0: has 2 GPUs, the stage's tp is 1"
sm plan-layers-reversed.json ": /groups/0/stages: stage 0 must hold layers from 0 on"
sm plan-stage-unknown-gpu.json ": /groups/0/stages/0/gpu: unknown GPU \"h900\""
sm plan-ingress-unknown-group.json ": /routing/ingress/0/group: no group \"g9\""
ex plan-ingress-negative-weight.json ": /routing/ingress/0/weight: is negative \\(-0\\.5\\)"
ex plan-kv-negative-weight.json ": /routing/kv/0/weight: is negative \\(-1\\)"
sm plan-tp-not-dividing-heads.json ": /groups/0/stages: tensor parallel degree 3 must divide the 32 attention heads of llama-3\\.1-8b"
rp plan-weights-sum-half.json ": /routing/ingress: the weights for all traffic sum to 0\\.5, not 1"

# Hugging Face configs and catalogs.
v -m hf-config-heads-not-dividing-hidden.json ": /num_attention_heads: must divide hidden_size \\(3584\\) when head_dim is not given, not 27"
v -m hf-config-zero-heads.json ": /num_attention_heads: must be an integer of at least 1"
v -m hf-config-hidden-string.json ": /hidden_size: must be an integer of at least 1"
v -m hf-config-layers-huge.json ": /num_hidden_layers: must be at most 100000000, not 1000000000"
v -m hf-config-vocab-huge.json ": /vocab_size: must be at most 100000000, not 1000000000000"
v -m hf-config-intermediate-zero.json ": /intermediate_size: must be an integer of at least 1"
v -m hf-config-max-position-zero.json ": /max_position_embeddings: must be an integer of at least 1"
v -m hf-config-top-level-array.json ": must be an object \\(a Hugging Face config\\.json\\)"
v -m hf-config-truncated.json ":17:19: premature end of input near '\"num_key_value_he'"
v -m hf-config-head-dim-zero.json ": /head_dim: must be an integer of at least 1"
v -m hf-config-kv-heads-above-heads.json ": /num_key_value_heads: must divide num_attention_heads \\(28\\), not 56"
v -m hf-config-hidden-real.json ": /hidden_size: must be an integer of at least 1"
v -m hf-config-layers-negative.json ": /num_hidden_layers: must be an integer of at least 1"
v -m hf-config-tie-string.json ": /tie_word_embeddings: must be true or false"
v -m hf-config-mla-no-v-head-dim.json ": an MLA model needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim"
v -m hf-config-mla-no-nope.json ": an MLA model needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim"
v -m hf-config-moe-experts-negative.json ": /n_routed_experts: must be an integer of at least 0"
v -m hf-config-moe-dense-layers-past-end.json ": /first_k_dense_replace: must be below num_hidden_layers \\(61\\), not 62"
run --catalog "$B/catalog-no-models" profiles list
bad_file 1 catalog-no-models "/models\\.json: No such file or directory"
run --catalog "$B/catalog-kv-heads-not-dividing" profiles list
bad_file 1 catalog-kv-heads-not-dividing "/models\\.json: /models/0/arch: kv_heads \\(3\\) must divide heads \\(4\\)"
run --catalog "$B/catalog-gpu-negative-mem" profiles list
bad_file 1 catalog-gpu-negative-mem "/gpus\\.json: /gpus/0/mem_gib: must be between 0\\.001 and 1e\\+07, not -80"
run --catalog "$B/catalog-duplicate-model" profiles list
bad_file 1 catalog-duplicate-model "/models\\.json: /models/1: duplicate model name \"tiny\""
run --catalog "$B/catalog-models-truncated" profiles list
bad_file 1 catalog-models-truncated "/models\\.json:10:2: string or '\\}' expected near end of file"
run --catalog "$B/catalog-gpu-empty-list" profiles list
bad_file 1 catalog-gpu-empty-list "/gpus\\.json: /gpus: must have at least 1 item"

# ---- missing files and stdin -----------------------------------------------------------
run validate -c "$B/does-not-exist.json"
expect_rc 1 "missing file"
expect_err_line "^hexplan: error: $(re "$B/does-not-exist.json"): No such file or directory\$" "missing file"
no_stdout "missing file"

run --catalog "$B/does-not-exist" profiles list
expect_rc 1 "missing catalog"
expect_err_line "^hexplan: error: $(re "$B/does-not-exist/gpus.json"): No such file or directory\$" "missing catalog"
no_stdout "missing catalog"

run validate -c - <"$B/cluster-truncated.json"
expect_rc 1 "stdin syntax error"
expect_err_line "^hexplan: error: <stdin>:5:1: '\]' expected near end of file\$" "stdin syntax error"
no_stdout "stdin syntax error"

# Standard input is named "<stdin>" in every message.
run validate -c - <"$B/cluster-unknown-key.json"
expect_rc 1 "stdin value error"
expect_err_line "^hexplan: error: <stdin>: /colour: unknown key\$" "stdin value error"
no_stdout "stdin value error"

# ---- infeasible: the model does not fit (exit 3) -----------------------------------------
num='[0-9]+\.[0-9]'
for tp in 1 8; do
	run estimate -m llama-3.1-405b -g l4 --tp $tp
	expect_rc 3 "405b on l4 tp $tp"
	expect_err_line "^hexplan: error: llama-3\.1-405b does not fit on $tp x l4 \(tp $tp, pp 1\): each GPU needs $num GiB of weights and $num GiB of reserve but has $num GiB usable: short by $num GiB\$" "405b on l4 tp $tp"
	no_stdout "405b on l4 tp $tp"
done

run estimate -m llama-3.1-8b -g l4 --batch 100000 --input 100000
expect_rc 3 "kv cache too small"
expect_err_line "^hexplan: error: the KV cache of llama-3\.1-8b on 1 x l4 holds [0-9]+ tokens but a batch of 100000 requests of 100000 \+ 128 tokens needs 10012800000\$" "kv cache too small"
no_stdout "kv cache too small"

# A bad workload given to estimate is still a loader error (exit 1).
run estimate -m llama-3.1-8b -g l4 -w "$B/workload-negative-rate.json"
expect_rc 1 "estimate -w bad workload"
expect_err_line "^hexplan: error: $(re "$B/workload-negative-rate.json"): /rate_rps: must be a positive number, not -5\$" "estimate -w bad workload"
no_stdout "estimate -w bad workload"

run estimate -m llama-3.1-8b -g h900
expect_rc 1 "estimate unknown gpu"
expect_err_line "^hexplan: error: unknown GPU \"h900\" \(see 'hexplan profiles list'\)\$" "estimate unknown gpu"
no_stdout "estimate unknown gpu"

run estimate -m no-such-model -g l4
expect_rc 1 "estimate unknown model"
expect_err_line "^hexplan: error: unknown model \"no-such-model\" \(see 'hexplan profiles list', or give a config\.json path\)\$" "estimate unknown model"
no_stdout "estimate unknown model"

# ---- usage errors (exit 2) ------------------------------------------------------------------
usage "unknown option" "^hexplan: error: unknown option '--frobnicate'\$" \
	estimate -m llama-3.1-8b -g l4 --frobnicate
usage "--tp 0" "^hexplan: error: --tp must be an integer from 1 to 1024, not \"0\"\$" \
	estimate -m llama-3.1-8b -g l4 --tp 0
usage "--tp abc" "^hexplan: error: --tp must be an integer from 1 to 1024, not \"abc\"\$" \
	estimate -m llama-3.1-8b -g l4 --tp abc
usage "--tp without value" "^hexplan: error: --tp needs an argument\$" \
	estimate -m llama-3.1-8b -g l4 --tp
usage "--tp not dividing heads" "^hexplan: error: tensor parallel degree 3 must divide the 32 attention heads of llama-3\.1-8b\$" \
	estimate -m llama-3.1-8b -g l4 --tp 3
usage "missing -m" "^hexplan: error: -m MODEL and -g GPU are required\$" \
	estimate -g l4
usage "validate without inputs" "^hexplan: error: give at least one of -c, -w, -t, -m, --measurements\$" \
	validate
usage "validate --format xml" "^hexplan: error: --format must be json or table, not \"xml\"\$" \
	validate -c examples/clusters/h100-node.json --format xml
usage "unknown command" "^hexplan: error: 'frobnicate' is not a hexplan command \(see 'hexplan --help'\)\$" \
	frobnicate
usage "--catalog without value" "^hexplan: error: --catalog needs an argument\$" \
	--catalog

# Option values (issue 20): decimal numbers in range, and no two files of
# a command the same (two outputs, an output and an input, '-' twice).
C=examples/clusters/h100-node.json W=examples/workloads/chat.json
PL=tests/data/plans/mixed-baseline.json
num="must be a number from"
usage "--time-limit hex" "^hexplan: error: --time-limit $num 0\.001 to 1e\+07, not \"0x10\"\$" \
	plan -c $C -w $W --mode colocated --time-limit 0x10
usage "--time-limit negative" "^hexplan: error: --time-limit $num 0\.001 to 1e\+07, not \"-1\"\$" \
	plan -c $C -w $W --mode colocated --time-limit -1
usage "--time-limit nan" "^hexplan: error: --time-limit $num 0\.001 to 1e\+07, not \"nan\"\$" \
	plan -c $C -w $W --mode colocated --time-limit nan
usage "--time-limit empty" "^hexplan: error: --time-limit $num 0\.001 to 1e\+07, not \"\"\$" \
	plan -c $C -w $W --mode colocated --time-limit ''
usage "--gap 2" "^hexplan: error: --gap $num 0 to 1, not \"2\"\$" \
	plan -c $C -w $W --mode colocated --gap 2
usage "--budget negative" "^hexplan: error: --budget $num 1e-06 to 1e\+09, not \"-5\"\$" \
	plan -c $C -w $W --budget -5
usage "--seed negative" "^hexplan: error: --seed must be an integer from 0 to 2147483647, not \"-1\"\$" \
	plan -c $C -w $W --seed -1
usage "--seed overflow" "^hexplan: error: --seed must be an integer from 0 to 2147483647, not \"99999999999999999999999\"\$" \
	plan -c $C -w $W --seed 99999999999999999999999
usage "--weights-mem-frac 1.5" "^hexplan: error: --weights-mem-frac $num 0 to 1, not \"1\.5\"\$" \
	plan -c $C -w $W --weights-mem-frac 1.5
usage "--requests 0" "^hexplan: error: --requests must be an integer from 1 to 50000000, not \"0\"\$" \
	simulate -p $PL -w $W --requests 0
usage "--requests 60000000" "^hexplan: error: --requests must be an integer from 1 to 50000000, not \"60000000\"\$" \
	simulate -p $PL -w $W --requests 60000000
usage "--rate subnormal" "^hexplan: error: --rate $num 1e-09 to 1e\+09, not \"1e-320\"\$" \
	simulate -p $PL -w $W --rate 1e-320
usage "--rate hex" "^hexplan: error: --rate $num 1e-09 to 1e\+09, not \"0x1p3\"\$" \
	simulate -p $PL -w $W --rate 0x1p3
usage "--duration 0" "^hexplan: error: --duration $num 1e-06 to 1e\+08, not \"0\"\$" \
	trace -w $W --duration 0
usage "--seed abc" "^hexplan: error: --seed must be an integer from 0 to 9223372036854775807, not \"abc\"\$" \
	trace -w $W --duration 10 --seed abc
usage "--pp 1000" "^hexplan: error: --pp must be an integer from 1 to 64, not \"1000\"\$" \
	estimate -m llama-3.1-8b -g l4 --pp 1000
usage "-o and --per-request" "^hexplan: error: -o and --per-request name the same file\$" \
	simulate -p $PL -w $W -o "$TMP/same" --per-request "$TMP/same"
usage "-o and --moves" "^hexplan: error: -o and --moves name the same file\$" \
	replan -p $PL -c $C -o "$TMP/same" --moves "$TMP/same"
usage "-o and --lp" "^hexplan: error: -o and --lp name the same file\$" \
	plan -c $C -w $W --mode colocated -o "$TMP/same" --lp "$TMP/same"
usage "-o is -p" "^hexplan: error: -p and -o name the same file\$" \
	export -p $PL --to launch -o $PL
usage "trace -o is -w" "^hexplan: error: -w and -o name the same file\$" \
	trace -w $W --duration 10 -o $W
usage "-c - -w -" "^hexplan: error: -c and -w both read standard input \('-' can be read once\)\$" \
	validate -c - -w -
usage "-p - -w -" "^hexplan: error: -p and -w both read standard input \('-' can be read once\)\$" \
	simulate -p - -w -

# ---- every file under tests/data/bad/ was tried -----------------------------------------------
for f in "$B"/*; do
	name=${f##*/}
	if grep -qxF -- "$name" "$TMP/seen"; then ok; else fail "$name: not tested"; fi
done

finish
