#!/bin/sh
# export --to dynamo: NVIDIA Dynamo DynamoGraphDeployment objects
# (nvidia.com/v1beta1) that lint, pass the CRD (../shared/tools/validate-k8s),
# hold a frontend and one vLLM worker component per group with its engine
# arguments, GPU count and replicas (prefill and decode workers for a
# disaggregated plan), one object per model (a LiteLLM router in front of
# their frontends when the ingress splits over models), and refuse what
# Dynamo cannot express unless --lossy (multi-node replicas even with it).
. "$(dirname "$0")/../lib.sh"

D=tests/data/export
P=tests/data/plans
VALIDATE=../shared/tools/validate-k8s

have_yaml=0
python3 -c 'import yaml' 2>/dev/null && have_yaml=1
have_validate=0
[ -x "$VALIDATE" ] && python3 -c 'import yaml, jsonschema' 2>/dev/null && have_validate=1
have_lint=0
command -v yamllint >/dev/null 2>&1 && have_lint=1
[ "$have_yaml" = 1 ] || echo "SKIP: python3-yaml is missing: no checks of the parsed objects"
[ "$have_validate" = 1 ] || echo "SKIP: $VALIDATE or python3-jsonschema is missing: no schema checks"
[ "$have_lint" = 1 ] || echo "SKIP: yamllint is missing: no lint"

# valid FILE DESC: lints and passes the CRD.
valid() {
	if [ "$have_lint" = 1 ]; then
		if yamllint -d relaxed "$1" >"$TMP/lint" 2>&1; then ok; else
			fail "$2: yamllint"
			head -5 "$TMP/lint" >&2
		fi
	fi
	if [ "$have_validate" = 1 ]; then
		if "$VALIDATE" "$1" >"$TMP/val" 2>&1; then ok; else
			fail "$2: validate-k8s"
			head -5 "$TMP/val" >&2
		fi
	fi
}

# check FILE DESC PYTHON: PYTHON holds for DOCS, the objects of FILE.
check() {
	[ "$have_yaml" = 1 ] || return 0
	python3 - "$1" "$3" <<'PY' && ok || fail "$2"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]
# the LiteLLM router of a split over models, apart from the graphs
router = {d["kind"]: d for d in docs if d["metadata"]["name"] == "hexplan-litellm"}
assert len(router) in (0, 3), router.keys()
docs = [d for d in docs if d["metadata"]["name"] != "hexplan-litellm"]
for d in docs:
    assert d["apiVersion"] == "nvidia.com/v1beta1" and d["kind"] == "DynamoGraphDeployment"
def comps(d):
    return d["spec"]["components"]
def main(c):
    return c["podTemplate"]["spec"]["containers"][0]
def flag(args, name):
    return args[args.index(name) + 1]
exec(sys.argv[2])
PY
}

# An aggregated plan: two groups of one model on H100 and A100, weights in
# proportion to their replicas: a Frontend and two vLLM workers.
run export -p $D/dynamo/agg.json --to dynamo
expect_rc 0 "aggregated"
[ -s "$TMP/err" ] && fail "aggregated: stderr is not empty" || ok
cp "$TMP/out" "$TMP/agg.yaml"
valid "$TMP/agg.yaml" "aggregated"
check "$TMP/agg.yaml" "aggregated: the components" '
assert len(docs) == 1 and docs[0]["metadata"]["name"] == "hexplan-llama-3-1-70b"
assert not router, "one model: no router"
c = comps(docs[0])
assert [x["name"] for x in c] == ["Frontend", "VllmDecodeWorker-1", "VllmDecodeWorker-2"]
assert [x["type"] for x in c] == ["frontend", "worker", "worker"]
assert [x["replicas"] for x in c] == [1, 8, 16]
assert main(c[0])["image"] == "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1"
for x, product in zip(c[1:], ["NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"]):
    m = main(x)
    assert m["command"] == ["python3", "-m", "dynamo.vllm"]
    assert flag(m["args"], "--model") == "meta-llama/Llama-3.1-70B-Instruct"
    assert flag(m["args"], "--tensor-parallel-size") == "2"
    assert 0 < int(flag(m["args"], "--max-model-len")) <= 131072
    assert "--disaggregation-mode" not in m["args"] and "--kv-transfer-config" not in m["args"]
    assert m["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert x["podTemplate"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": product}
    assert {"name": "HF_HOME", "value": "/models/huggingface"} in m["env"]
    assert {"name": "model-cache", "emptyDir": {}} in x["podTemplate"]["spec"]["volumes"]
'

# --image and --model-cache reach every container and volume.
run export -p $D/dynamo/agg.json --to dynamo --image registry.example/dynamo:x --model-cache models
expect_rc 0 "--image --model-cache"
cp "$TMP/out" "$TMP/agg-opts.yaml"
valid "$TMP/agg-opts.yaml" "--image --model-cache"
check "$TMP/agg-opts.yaml" "--image --model-cache: the pods" '
for x in comps(docs[0]):
    assert main(x)["image"] == "registry.example/dynamo:x"
for x in comps(docs[0])[1:]:
    assert x["podTemplate"]["spec"]["volumes"] == [{"name": "model-cache", "persistentVolumeClaim": {"claimName": "models"}}]
'

# A disaggregated plan: a prefill worker with the NIXL connector and a
# decode worker, as Dynamo's disaggregated vLLM example has them.
run export -p $P/mixed-disagg.json --to dynamo
expect_rc 0 "disaggregated"
[ -s "$TMP/err" ] && fail "disaggregated: stderr is not empty" || ok
cp "$TMP/out" "$TMP/disagg.yaml"
valid "$TMP/disagg.yaml" "disaggregated"
check "$TMP/disagg.yaml" "disaggregated: prefill and decode workers" '
c = comps(docs[0])
assert [(x["name"], x["type"]) for x in c] == [("Frontend", "frontend"), ("VllmPrefillWorker", "prefill"), ("VllmDecodeWorker", "decode")]
pre, dec = main(c[1])["args"], main(c[2])["args"]
assert flag(pre, "--disaggregation-mode") == "prefill" and flag(dec, "--disaggregation-mode") == "decode"
assert flag(pre, "--kv-transfer-config") == "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}"
assert "--kv-transfer-config" not in dec
assert main(c[1])["resources"]["limits"] == {"nvidia.com/gpu": 1}
'

# Refusals: weights Dynamo's router does not keep (then --lossy), several
# prefill and decode groups, multi-node replicas (even with --lossy),
# cascades, and --engine, which the target lacks.
run export -p $D/baseline.json --to dynamo
expect_rc 1 "baseline refused"
expect_err_line '^hexplan: error: model "llama-3.1-70b": the plan.s ingress weights per replica range from .* \(--lossy writes the closest form\)$' "baseline refusal"
run export -p $D/baseline.json --to dynamo --lossy
expect_rc 0 "baseline --lossy"
expect_err_line '^hexplan: lossy: model "llama-3.1-70b": the plan.s ingress weights per replica' "baseline --lossy says what is lost"
cp "$TMP/out" "$TMP/baseline.yaml"
valid "$TMP/baseline.yaml" "baseline --lossy"
run export -p $D/disagg.json --to dynamo
expect_rc 1 "disagg refused"
expect_err_line '^hexplan: error: model "llama-3.1-8b": 5 prefill and 5 decode groups, .*KV routes are not kept' "disagg refusal"
run export -p $D/pipeline.json -c $D/pipeline-cluster.json --to dynamo --lossy
expect_rc 1 "multi-node replicas refused with --lossy"
expect_err_line '^hexplan: error: group "g0": a replica spans 2 nodes, and the dynamo export writes single-node workers' "multi-node refusal"
run export -p $D/baseline.json --to dynamo --engine vllm
expect_rc 2 "--engine is a usage error"

# Several models: one DynamoGraphDeployment each (the cascade is lost).
run export -p $P/mixed-cascade.json --to dynamo
expect_rc 1 "cascade refused"
expect_err_line '^hexplan: error: the cascade \(2 steps\) is not expressible' "cascade refusal"
run export -p $P/mixed-cascade.json --to dynamo --lossy
expect_rc 0 "cascade --lossy"
cp "$TMP/out" "$TMP/models.yaml"
valid "$TMP/models.yaml" "two models"
check "$TMP/models.yaml" "one object per model" '
assert [d["metadata"]["name"] for d in docs] == ["hexplan-qwen3-32b", "hexplan-qwen3-8b"]
assert not router, "the cascade'"'"'s ingress goes to one model: no router"
for d in docs:
    assert comps(d)[0]["type"] == "frontend"
    assert len({flag(main(x)["args"], "--model") for x in comps(d)[1:]}) == 1
'

# A route plan split over models (agg.json with g1 serving another model):
# a LiteLLM router (ConfigMap, Deployment, Service hexplan-litellm) whose
# model_list sends each model's share to its graph's frontend Service,
# GRAPH-frontend on port 8000 (Dynamo's operator names it so), under the
# model's repository (the name the frontend serves: the workers' --model)
# and under "hexplan", weighted by the plan. Nothing is lost, so nothing is
# said, with or without --lossy.
python3 - $D/dynamo/agg.json "$TMP" <<'PY' || fail "making the two-model plans"
import copy, json, sys
p = json.load(open(sys.argv[1]))
p["mode"] = "route"
m = copy.deepcopy(p["models"][0])
m["name"], m["hf_repo"] = "other", "org/other-70b"
p["models"].append(m)
p["groups"][1]["model"] = "other"
json.dump(p, open(sys.argv[2] + "/two.json", "w"), indent=1)
# a model whose frontend Service name would pass 63 characters
m["name"] = "o" * 56
p["groups"][1]["model"] = m["name"]
json.dump(p, open(sys.argv[2] + "/long.json", "w"), indent=1)
PY
for lossy in "" --lossy; do
	run export -p "$TMP/two.json" --to dynamo $lossy
	expect_rc 0 "two models $lossy"
	[ -s "$TMP/err" ] && fail "two models $lossy: nothing lost, nothing said" || ok
done
cp "$TMP/out" "$TMP/two.yaml"
valid "$TMP/two.yaml" "two models"
check "$TMP/two.yaml" "two models: the LiteLLM router before the frontends" '
import random
from collections import Counter
assert [d["metadata"]["name"] for d in docs] == ["hexplan-llama-3-1-70b", "hexplan-other"]
assert sorted(router) == ["ConfigMap", "Deployment", "Service"], router.keys()
c = router["Deployment"]["spec"]["template"]["spec"]["containers"][0]
assert c["image"] == "ghcr.io/berriai/litellm:main-v1.80.12", c["image"]
assert c["args"] == ["--config", "/etc/litellm/config.yaml", "--port", "4000"], c["args"]
assert router["Service"]["spec"]["ports"][0]["port"] == 4000
cfg = yaml.safe_load(router["ConfigMap"]["data"]["config.yaml"])
assert cfg["router_settings"]["routing_strategy"] == "simple-shuffle"
# the frontend Service of each graph and the model its workers serve
serves = {}
for d in docs:
    [model] = {flag(main(x)["args"], "--model") for x in comps(d)[1:]}
    assert "--served-model-name" not in main(comps(d)[1])["args"]
    serves[d["metadata"]["name"] + "-frontend"] = model
def backend(dep):
    p = dep["litellm_params"]
    host = p["api_base"].split("//")[1].split(":")[0]
    assert p["api_base"] == f"http://{host}:8000/v1", p
    assert p["model"].startswith("hosted_vllm/"), p
    assert "extra_headers" not in p, p
    return host, p["model"][len("hosted_vllm/"):]
# simple-shuffle: among the deployments of the requested model_name, a draw
# by litellm_params.weight; LiteLLM sends the model without its prefix
def route(model, rng):
    cands = [d for d in cfg["model_list"] if d["model_name"] == model]
    assert cands, model
    return backend(rng.choices(cands, weights=[d["litellm_params"]["weight"] for d in cands])[0])
rng = random.Random(1)
for model in serves.values():
    for _ in range(500):
        host, sent = route(model, rng)
        assert sent == model and serves[host] == model, (model, host, sent)
plan = {"hexplan-llama-3-1-70b-frontend": 0.333333, "hexplan-other-frontend": 0.666667}
hits = Counter()
for _ in range(20000):
    host, sent = route("hexplan", rng)
    assert serves[host] == sent, (host, sent)
    hits[host] += 1
for host, w in plan.items():
    assert abs(hits[host] / 20000 - w) < 0.02, (host, hits)
    [d] = [d for d in cfg["model_list"] if d["model_name"] == "hexplan" and backend(d)[0] == host]
    assert abs(d["litellm_params"]["weight"] - w) < 1e-5, d
'
for lossy in "" --lossy; do
	run export -p "$TMP/long.json" --to dynamo $lossy
	expect_rc 1 "two models $lossy: a frontend Service name too long"
	expect_err_line '^hexplan: error: model "o{56}": the LiteLLM router that splits the plan.s requests over its models sends them to the frontend Service hexplan-o{52}-frontend, whose name passes Kubernetes. 63 characters$' "too long $lossy: the message"
	[ -s "$TMP/out" ] && fail "too long $lossy: nothing written" || ok
done

finish
