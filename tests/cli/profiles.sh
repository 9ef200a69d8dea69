#!/bin/sh
# profiles list/show and --catalog.
. "$(dirname "$0")/../lib.sh"

run profiles list --format json
expect_rc 0 "list json"
n=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["gpus"]), len(d["models"]))' "$TMP/out")
case "$n" in
"17 20" | 1[7-9]\ 2[0-9] | 2[0-9]\ 2[0-9]) ok ;;
*) fail "list json: counts $n" ;;
esac

run profiles list
expect_rc 0 "list table"
expect_out '^h100-sxm +79\.6' "table row for h100-sxm"
expect_out '^deepseek-v3 +671\.0' "table row for deepseek-v3"

run profiles show gpu h100-sxm
expect_rc 0 "show gpu"
approx "$(jnum tflops_bf16)" 989 0.001 && ok || fail "h100 tflops_bf16 $(jnum tflops_bf16)"
[ "$(jnum product)" = "NVIDIA-H100-80GB-HBM3" ] && ok || fail "h100 product label"

run profiles show model qwen3-30b-a3b
expect_rc 0 "show model"
approx "$(jnum params_b)" 30.5 0.02 && ok || fail "qwen3-30b-a3b params"
approx "$(jnum active_params_b)" 3.3 0.03 && ok || fail "qwen3-30b-a3b active params"

run profiles show model examples/models/qwen2.5-7b-instruct/config.json
expect_rc 0 "show model from config.json"
[ "$(jnum arch.kv_heads)" = "4" ] && ok || fail "config.json kv_heads"

run profiles show gpu h900
expect_rc 1 "unknown gpu"
expect_err_line '^hexplan: error: unknown GPU "h900"' "unknown gpu message"

run profiles show cpu x
expect_rc 2 "show cpu"

# --catalog replaces the built-in catalog.
mkdir "$TMP/cat"
python3 - "$TMP/cat" <<'PY'
import json, sys
d = sys.argv[1]
g = json.load(open("profiles/gpus.json"))
g["gpus"] = [x for x in g["gpus"] if x["name"] == "l4"]
g["gpus"][0]["name"] = "my-l4"
json.dump(g, open(d + "/gpus.json", "w"))
m = json.load(open("profiles/models.json"))
m["models"] = [x for x in m["models"] if x["name"] == "mistral-7b"]
json.dump(m, open(d + "/models.json", "w"))
PY
run --catalog "$TMP/cat" profiles list --format json
expect_rc 0 "--catalog list"
expect_out '"my-l4"' "--catalog gpu"
if grep -q h100 "$TMP/out"; then fail "--catalog kept built-in GPUs"; else ok; fi
run profiles list --catalog "$TMP/cat" --format json
expect_rc 0 "--catalog after the command"
expect_out '"my-l4"' "--catalog after the command gpu"
run --catalog "$TMP/nonexistent" profiles list
expect_rc 1 "--catalog missing dir"
expect_err_line "^hexplan: error: $TMP/nonexistent/gpus.json: No such file or directory$" "--catalog missing dir message"

finish
