#!/bin/sh
# export --to k8s and --to kserve: the fixture plans as manifests that parse,
# lint, pass the published schemas (../shared/tools/validate-k8s), match the
# golden files, carry the ingress weights as proportional integers, name
# everything with unique DNS-1123 labels, refuse what they cannot express
# unless --lossy, and keep hostile names from breaking the YAML.
# HX_UPDATE_GOLDEN=1 rewrites the golden files.
. "$(dirname "$0")/../lib.sh"

D=tests/data/export
G=$D/k8s
VALIDATE=../shared/tools/validate-k8s

have_yaml=0
python3 -c 'import yaml' 2>/dev/null && have_yaml=1
have_validate=0
[ -x "$VALIDATE" ] && python3 -c 'import yaml, jsonschema' 2>/dev/null && have_validate=1
have_lint=0
command -v yamllint >/dev/null 2>&1 && have_lint=1
[ "$have_yaml" = 1 ] || echo "SKIP: python3-yaml is missing: no checks of the parsed manifests"
[ "$have_validate" = 1 ] || echo "SKIP: $VALIDATE or python3-jsonschema is missing: no schema checks"
[ "$have_lint" = 1 ] || echo "SKIP: yamllint is missing: no lint"

# valid FILE DESC: lints, passes the schemas, unique DNS-1123 names and
# valid label values.
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
	[ "$have_yaml" = 1 ] || return 0
	python3 - "$1" <<'PY' && ok || fail "$2: names and labels"
import re, sys, yaml
dns = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
value = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
seen = set()
def labels(x):
    if isinstance(x, dict):
        for k, v in x.items():
            if k in ("labels", "matchLabels", "nodeSelector") or (k == "selector" and all(isinstance(s, str) for s in v.values())):
                for lk, lv in v.items():
                    assert isinstance(lv, str) and len(lv) <= 63 and value.match(lv), (lk, lv)
            labels(v)
    elif isinstance(x, list):
        for v in x:
            labels(v)
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]
assert docs
for d in docs:
    name = d["metadata"]["name"]
    assert len(name) <= 63 and dns.match(name), name
    assert (d["kind"], name) not in seen, ("twice", d["kind"], name)
    seen.add((d["kind"], name))
    labels(d)
PY
}

# golden FILE NAME: FILE is the golden file NAME.
golden() {
	if [ -n "${HX_UPDATE_GOLDEN:-}" ]; then
		mkdir -p "$G" && cp "$1" "$G/$2"
	fi
	if cmp -s "$1" "$G/$2"; then ok; else
		fail "$2 differs from the golden file"
		diff "$G/$2" "$1" | head -10 >&2
	fi
}

# weights PLAN FILE TARGET DESC: the route weights are integers <= 1,000,000
# summing to 1,000,000, proportional to the plan's ingress weights (within
# rounding), per group (k8s) or per LLMInferenceService (kserve: its group
# and its prefill groups).  The fixtures' group names are DNS labels.
weights() {
	[ "$have_yaml" = 1 ] || return 0
	python3 - "$1" "$2" "$3" <<'PY' && ok || fail "$4: route weights"
import json, sys, yaml
plan = json.load(open(sys.argv[1]))
docs = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d is not None]
want = {}
for r in plan["routing"]["ingress"]:
    want[r["group"]] = want.get(r["group"], 0) + r["weight"]
total = sum(want.values())
got = {}
if sys.argv[3] == "k8s":
    routes = [d for d in docs if d["kind"] == "HTTPRoute"]
    assert len(routes) == 1 and len(routes[0]["spec"]["rules"]) == 1
    assert routes[0]["spec"]["parentRefs"] == [{"name": "hexplan-gateway"}]
    svc = {d["metadata"]["name"]: d["spec"]["selector"]["hexplan.dev/group"] for d in docs if d["kind"] == "Service"}
    for b in routes[0]["spec"]["rules"][0]["backendRefs"]:
        got[(svc[b["name"]],)] = b["weight"]
        assert b["port"] == 8000
else:
    units = [d for d in docs if d["kind"] == "LLMInferenceService"]
    for d in units:
        groups = [d["metadata"]["labels"]["hexplan.dev/group"]]
        groups += [g for g in d["metadata"]["annotations"].get("hexplan.dev/prefill-groups", "").split(",") if g]
        route = d["spec"]["router"]["route"]
        if len(units) == 1:
            assert route == {}, route
            route = {"weight": 1000000}
        else:
            assert route["group"] == "hexplan-" + d["metadata"]["labels"]["hexplan.dev/model"], route
        got[tuple(groups)] = route["weight"]
assert all(isinstance(v, int) and 0 <= v <= 1000000 for v in got.values()), got
assert sum(got.values()) == 1000000, sum(got.values())
assert set(want) <= {g for k in got for g in k}, (got, want)
for k, v in got.items():
    share = sum(want.get(g, 0) for g in k) / total
    assert abs(v / 1e6 - share) <= 1e-6 + 1e-12, (k, v, share)
PY
}

# The fixtures, both targets: exit 0 (disagg to k8s: a refusal, then --lossy).
for f in baseline pipeline disagg colocated; do
	for t in k8s kserve; do
		c=""
		[ "$f" = pipeline ] && c="-c $D/pipeline-cluster.json"
		if [ "$f.$t" = disagg.k8s ]; then
			# shellcheck disable=SC2086
			run export -p $D/$f.json $c --to $t
			expect_rc 1 "$f --to $t refuses the KV routes"
			expect_err_line '^hexplan: error: Kubernetes objects cannot carry the KV routes \(p0->d9, p1->d8, p2->d7, p4->d6, \.\.\.\): .* \(--lossy writes the closest form\)$' "$f --to $t refusal"
			# shellcheck disable=SC2086
			run export -p $D/$f.json $c --to $t --lossy
			expect_rc 0 "$f --to $t --lossy"
			expect_err_line '^hexplan: lossy: Kubernetes objects cannot carry the KV routes' "$f --to $t --lossy says what is lost"
		else
			# shellcheck disable=SC2086
			run export -p $D/$f.json $c --to $t
			expect_rc 0 "$f --to $t"
			[ -s "$TMP/err" ] && fail "$f --to $t: stderr is not empty" || ok
		fi
		cp "$TMP/out" "$TMP/$f.$t.yaml"
		valid "$TMP/$f.$t.yaml" "$f --to $t"
		golden "$TMP/$f.$t.yaml" "$f.$t.yaml"
		weights $D/$f.json "$TMP/$f.$t.yaml" $t "$f --to $t"
	done
done

# -o FILE writes what stdout gets; the export is deterministic.
run export -p $D/baseline.json --to k8s -o "$TMP/b.yaml"
expect_rc 0 "-o FILE"
cmp -s "$TMP/b.yaml" "$TMP/baseline.k8s.yaml" && ok || fail "-o FILE differs from stdout"
run export -p $D/pipeline.json --to k8s
cmp -s "$TMP/out" "$TMP/pipeline.k8s.yaml" && ok || fail "pipeline without the cluster file differs"

# What the manifests say.
if [ "$have_yaml" = 1 ]; then
	python3 - "$TMP" <<'PY' && ok || fail "manifest contents"
import sys, yaml
def load(name):
    return [d for d in yaml.safe_load_all(open(f"{sys.argv[1]}/{name}")) if d is not None]
def kinds(docs, kind):
    return [d for d in docs if d["kind"] == kind]
def main(pod):
    return pod["containers"][0]
def flag(cmd, name):
    return cmd[cmd.index(name) + 1]

# baseline: one Deployment and one Service per group, pinned, GPU limits
b = load("baseline.k8s.yaml")
deps = kinds(b, "Deployment")
assert [d["metadata"]["name"] for d in deps] == ["hexplan-g0", "hexplan-g1", "hexplan-g2"]
assert [d["spec"]["replicas"] for d in deps] == [8, 16, 4]
assert len(kinds(b, "Service")) == 3 and not kinds(b, "LeaderWorkerSet")
for d, product, tp in zip(deps, ["NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB", "NVIDIA-L40S"], [2, 2, 4]):
    pod = d["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": product}
    c = main(pod)
    assert c["image"] == "vllm/vllm-openai:v0.11.0"  # pinned: the flags are version-gated
    assert c["resources"]["limits"] == {"nvidia.com/gpu": tp}
    assert c["resources"]["requests"]["cpu"] == str(4 * tp)
    mem = c["resources"]["requests"]["memory"]  # 16 GiB and the pod's share of the weights
    assert mem.endswith("Gi") and int(mem[:-2]) >= 16 + 131 * tp // 8, mem
    # large models load for minutes: the start-up budget grows with the
    # weights (70B BF16: 141 GB at 100 MB/s and 300 s), then liveness
    assert c["startupProbe"]["httpGet"] == c["livenessProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    assert c["startupProbe"]["periodSeconds"] * c["startupProbe"]["failureThreshold"] >= 1700
    assert c["livenessProbe"]["failureThreshold"] == 3
    assert {"name": "HF_HOME", "value": "/models/huggingface"} in c["env"]
    assert {"name": "model-cache", "mountPath": "/models"} in c["volumeMounts"]
    assert {"name": "model-cache", "emptyDir": {}} in pod["volumes"]
    assert c["command"][:3] == ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct"]
    assert flag(c["command"], "--tensor-parallel-size") == str(tp)
    assert flag(c["command"], "--pipeline-parallel-size") == "1"
    assert 0 < int(flag(c["command"], "--max-model-len")) <= 131072  # the KV cache may hold less
    assert c["readinessProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in pod["volumes"]
    labels = d["spec"]["template"]["metadata"]["labels"]
    assert labels["hexplan.dev/group"] == d["metadata"]["name"][len("hexplan-"):]
    assert labels["app.kubernetes.io/name"] == "vllm"
    assert d["spec"]["selector"]["matchLabels"].items() <= labels.items()
# a PodDisruptionBudget per group: one pod down at a time
pdbs = kinds(b, "PodDisruptionBudget")
assert [x["metadata"]["name"] for x in pdbs] == ["hexplan-g0", "hexplan-g1", "hexplan-g2"]
for x, d in zip(pdbs, deps):
    assert x["spec"]["maxUnavailable"] == 1
    assert x["spec"]["selector"]["matchLabels"] == d["spec"]["selector"]["matchLabels"]

# pipeline: a LeaderWorkerSet, stage 0 on the leader's GPU type, stage 1 on
# the workers'
p = load("pipeline.k8s.yaml")
[lws] = kinds(p, "LeaderWorkerSet")
t = lws["spec"]["leaderWorkerTemplate"]
assert lws["spec"]["replicas"] == 1 and t["size"] == 2
lead, work = t["leaderTemplate"]["spec"], t["workerTemplate"]["spec"]
assert lead["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
assert work["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
assert main(lead)["resources"]["limits"] == main(work)["resources"]["limits"] == {"nvidia.com/gpu": 2}
script = main(lead)["command"][2]
assert "vllm serve meta-llama/Llama-3.1-70B-Instruct" in script and "--pipeline-parallel-size 2" in script
assert "--tensor-parallel-size 2" in script and "--distributed-executor-backend ray" in script
assert {"name": "VLLM_PP_LAYER_PARTITION", "value": "41,39"} in main(lead)["env"]
assert "readinessProbe" in main(lead) and "readinessProbe" not in main(work)
assert "$$LWS_LEADER_ADDRESS" in main(work)["command"][2]
[svc] = kinds(p, "Service")
assert svc["spec"]["selector"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"
assert lws["metadata"]["annotations"]["hexplan.dev/placement"] == "g0r0: a:0 a:1 | b:0 b:1"

# disagg: llm-d roles and NIXL on every pod; the route to the prefill groups
d = load("disagg.k8s.yaml")
for x in kinds(d, "Deployment"):
    role = x["spec"]["template"]["metadata"]["labels"]["llm-d.ai/role"]
    assert role == ("prefill" if x["metadata"]["name"].startswith("hexplan-p") else "decode")
    cmd = main(x["spec"]["template"]["spec"])["command"]
    kv = {"prefill": "kv_producer", "decode": "kv_consumer"}[role]
    assert flag(cmd, "--kv-transfer-config") == '{"kv_connector":"NixlConnector","kv_role":"%s"}' % kv
[r] = kinds(d, "HTTPRoute")
assert [x["name"] for x in r["spec"]["rules"][0]["backendRefs"]] == ["hexplan-p0", "hexplan-p1", "hexplan-p2", "hexplan-p4", "hexplan-p5"]

# kserve: one LLMInferenceService per group, or per decode group with its
# prefill group
ks = load("baseline.kserve.yaml")
assert [x["metadata"]["name"] for x in ks] == ["hexplan-g0", "hexplan-g1", "hexplan-g2"]
for x in ks:
    assert x["apiVersion"] == "serving.kserve.io/v1alpha2"
    assert x["spec"]["model"] == {"uri": "hf://meta-llama/Llama-3.1-70B-Instruct", "name": "meta-llama/Llama-3.1-70B-Instruct"}
    assert x["spec"]["router"]["scheduler"] == {} and x["spec"]["router"]["gateway"] == {}
    c = main(x["spec"]["template"])
    # KServe's preset runs vLLM (its port, probes, TLS, /mnt/models): the
    # template adds arguments only, and keeps the preset's image
    assert c["name"] == "main" and "command" not in c and "image" not in c, c.keys()
    assert "--port" not in c["args"] and "--tensor-parallel-size" not in c["args"]
    assert not {"ports", "readinessProbe", "livenessProbe", "startupProbe"} & c.keys()
assert [x["spec"]["replicas"] for x in ks] == [8, 16, 4]
assert [x["spec"]["parallelism"] for x in ks] == [{"tensor": 2}, {"tensor": 2}, {"tensor": 4}]
[kp] = load("pipeline.kserve.yaml")
assert kp["spec"]["parallelism"] == {"tensor": 2, "pipeline": 2}
assert kp["spec"]["template"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
assert kp["spec"]["worker"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
kd = load("disagg.kserve.yaml")
pairs = {x["metadata"]["name"]: x["metadata"]["annotations"]["hexplan.dev/prefill-groups"] for x in kd}
assert pairs == {"hexplan-d3": "p5", "hexplan-d6": "p4", "hexplan-d7": "p2", "hexplan-d8": "p1", "hexplan-d9": "p0"}, pairs
import shlex
for x in kd:
    assert x["spec"]["labels"]["llm-d.ai/role"] == "decode"
    assert x["spec"]["prefill"]["labels"]["llm-d.ai/role"] == "prefill"
    assert x["spec"]["prefill"]["replicas"] == 8
    for unit, kv in ((x["spec"], "kv_consumer"), (x["spec"]["prefill"], "kv_producer")):
        c = main(unit["template"])
        assert "command" not in c and not {"ports", "readinessProbe", "startupProbe"} & c.keys()
        # the preset appends them through eval "... $@": shell words
        argv = shlex.split(" ".join(c["args"]))
        assert flag(argv, "--kv-transfer-config") == '{"kv_connector":"NixlConnector","kv_role":"%s"}' % kv, argv
PY
fi

# KServe's decode preset, merged under the decode unit's template (strategic
# merge: the container by name, scalars replaced, args appended to the
# preset's command by "$@"), still serves on 8001 and probes it there.
PRESET=../shared/schemas/kserve/llmisvcconfigs-resources.yaml
if [ "$have_yaml" = 1 ] && [ -f "$PRESET" ]; then
	python3 - "$PRESET" "$TMP/disagg.kserve.yaml" <<'PY' && ok || fail "kserve decode unit keeps the preset's port and probes"
import sys, yaml
presets = {d["metadata"]["name"]: d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
[base] = presets["kserve-config-llm-decode-template"]["spec"]["template"]["containers"]
unit = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d][0]
[mine] = unit["spec"]["template"]["containers"]
merged = dict(base)
merged.update({k: v for k, v in mine.items() if k not in ("env", "volumeMounts")})
assert "--port 8001" in merged["command"][2] and '$@"' in merged["command"][2]
for p in ("readinessProbe", "livenessProbe", "startupProbe"):
    assert merged[p]["httpGet"]["port"] == 8001, p
assert merged["ports"] == [{"containerPort": 8001, "protocol": "TCP"}]
assert merged["image"] == base["image"] and "/mnt/models" in merged["command"][2]
assert "--kv-transfer-config" in merged["args"]
PY
else
	echo "SKIP: $PRESET or python3-yaml is missing: no merge with KServe's preset"
fi

# --image and --model-cache: every pod runs the image and mounts the claim;
# the header records the image; bad values are usage errors.
run export -p $D/disagg.json --to k8s --lossy --image registry.local/vllm:v0.11.0 --model-cache llm-cache
expect_rc 0 "--image --model-cache"
cp "$TMP/out" "$TMP/opts.yaml"
valid "$TMP/opts.yaml" "--image --model-cache"
head -1 "$TMP/opts.yaml" | grep -qx '# Written by hexplan export --to k8s: image registry.local/vllm:v0.11.0 (--image).' &&
	ok || fail "--image: the header records it"
[ "$(grep -c 'image: "registry.local/vllm:v0.11.0"' "$TMP/opts.yaml")" = 10 ] &&
	[ "$(grep -c 'claimName: "llm-cache"' "$TMP/opts.yaml")" = 10 ] && ok ||
	fail "--image --model-cache: every pod"
run export -p $D/disagg.json --to k8s --lossy --model-cache Bad_Claim
expect_rc 2 "--model-cache not a DNS label"
grep -q '^hexplan: error: --model-cache must name a PersistentVolumeClaim (a DNS-1123 label), not "Bad_Claim"$' "$TMP/err" &&
	ok || fail "--model-cache message"
run export -p $D/disagg.json --to kserve --model-cache llm-cache
expect_rc 2 "--model-cache --to kserve"
run export -p $D/baseline.json --to k8s --image 'x $(id)'
expect_rc 2 "--image with a blank and a substitution"

# --engine-version: the NVIDIA pods run vllm/vllm-openai at that release and
# the header records it; without it, the release the flags were checked
# against (0.11.0); a release older than the oldest known, or no release
# number, is a usage error; dynamo (Dynamo's runtime picks vLLM), kserve
# (KServe's preset does) and dot take none.
run export -p $D/baseline.json --to k8s --engine-version 0.12.0
expect_rc 0 "--engine-version 0.12.0"
cp "$TMP/out" "$TMP/ver.yaml"
valid "$TMP/ver.yaml" "--engine-version 0.12.0"
head -1 "$TMP/ver.yaml" | grep -qx '# Written by hexplan export --to k8s for vLLM 0.12.0: images vllm/vllm-openai:v0.12.0 and,' &&
	ok || fail "--engine-version: the header records the release and its image"
[ "$(grep -c 'image: "vllm/vllm-openai:v0.12.0"' "$TMP/ver.yaml")" = "$(grep -c 'image:' "$TMP/ver.yaml")" ] &&
	sed -e 's/0\.12\.0/0.11.0/g' "$TMP/ver.yaml" >"$TMP/ver-back.yaml" &&
	cmp -s "$TMP/ver-back.yaml" "$G/baseline.k8s.yaml" && ok ||
	fail "--engine-version: only the release and the image tag change"
run export -p $D/baseline.json --to k8s --engine sglang --lossy --engine-version 0.12.0
expect_rc 0 "--engine sglang --lossy --engine-version: the release of the vLLM pods"
head -1 "$TMP/out" | grep -qx '# Written by hexplan export --to k8s for vLLM 0.12.0: images vllm/vllm-openai:v0.12.0 and,' &&
	ok || fail "--engine sglang --lossy --engine-version: vLLM's release"
run export -p $D/baseline.json --to k8s --engine sglang --lossy --engine-version 0.5.0
expect_rc 2 "--engine sglang --lossy --engine-version 0.5.0: an old vLLM"
run export -p $D/baseline.json --to k8s --engine-version 0.10.0
expect_rc 2 "--engine-version older than the oldest"
head -1 "$TMP/err" | grep -qxF 'hexplan: error: --engine-version 0.10.0: vLLM releases before 0.10.1 are not supported (their flags were not checked)' &&
	ok || fail "--engine-version older than the oldest: message"
run export -p $D/baseline.json --to k8s --engine-version v0.11
expect_rc 2 "--engine-version not a release number"
head -1 "$TMP/err" | grep -qxF 'hexplan: error: --engine-version must be a release number such as 0.11.0, not "v0.11"' &&
	ok || fail "--engine-version not a release number: message"
for to in kserve dynamo dot; do
	run export -p $D/baseline.json --to $to --engine-version 0.11.0
	expect_rc 2 "--engine-version --to $to"
	head -1 "$TMP/err" | grep -qxF 'hexplan: error: --engine-version is for --to launch, k8s or llm-d' &&
		ok || fail "--engine-version --to $to: message"
done

# Variants of the fixtures, made here.
python3 - "$D" "$TMP" <<'PY' || fail "making the variant plans"
import copy, json, sys
d, tmp = sys.argv[1:]
def load(n):
    return json.load(open(f"{d}/{n}"))
def save(x, n):
    json.dump(x, open(f"{tmp}/{n}", "w"), indent=1)
p, b = load("pipeline.json"), load("baseline.json")
h100 = [g for g in b["gpus"] if g["name"] == "h100-sxm"][0]

# two models: g2 serves another one (a route plan's split)
q = copy.deepcopy(b)
m = copy.deepcopy(q["models"][0])
m["name"], m["hf_repo"] = "other", "org/other-70b"
q["models"].append(m)
q["groups"][2]["model"] = "other"
save(q, "two.json")

# three stages on three GPU types: two kinds of workers
q = copy.deepcopy(p)
q["gpus"].append(h100)
g = q["groups"][0]
g["stages"] = [{"gpu": "a100-40g", "tp": 2, "layers": [0, 27]}, {"gpu": "l40s", "tp": 2, "layers": [27, 54]},
               {"gpu": "h100-sxm", "tp": 2, "layers": [54, 80]}]
g["replicas"][0]["placement"] = [["a:0", "a:1"], ["b:0", "b:1"], ["c:0", "c:1"]]
g["replicas"][0]["links"] = [{"bw_gbps": 100.0, "latency_ms": 0.02}] * 2
save(q, "three.json")

# stages with different TP sizes
q = copy.deepcopy(p)
q["groups"][0]["stages"][1]["tp"] = 4
q["groups"][0]["replicas"][0]["placement"][1] = ["b:0", "b:1", "b:2", "b:3"]
save(q, "tp.json")

# stage 1 over two nodes: three pods for two stages
q = copy.deepcopy(p)
q["groups"][0]["replicas"][0]["placement"][1] = ["b:0", "c:0"]
save(q, "cross.json")

# AMD GPUs for the L40S group
q = copy.deepcopy(b)
for x in q["gpus"]:
    if x["name"] == "l40s":
        x["vendor"], x["product"] = "amd", "AMD_Instinct_MI300X_OAM"
save(q, "amd.json")

# a GPU whose product is no label value
q = copy.deepcopy(b)
for x in q["gpus"]:
    if x["name"] == "l40s":
        x["product"] = "NVIDIA L40S (48 GB)"
save(q, "product.json")

# group names that collide as DNS labels; weights that do not divide evenly
q = copy.deepcopy(b)
names = ["G0", "g0", "g0."]
for x, n in zip(q["groups"], names):
    x["name"] = n
for r, n in zip(q["routing"]["ingress"], names):
    r["group"], r["weight"] = n, 1 / 3
save(q, "names.json")

# hostile names: nodes, hosts, groups, replicas, model and repository
q, c = copy.deepcopy(p), load("pipeline-cluster.json")
evil = {"a": "n\"a\\me: x\n- $(reboot)'; rm -rf / #", "b": "\u00f1\u00f8 {b}: [1,2] &anchor *ref ! %tag \u2028 \U0001F600 \t"}
for n in c["nodes"]:
    n["name"], n["host"] = evil[n["name"]], "h\"ost$(id)\n"
group = "G0\"; rm -rf / #\n---\nkind: Secret"
model = "llama$(id)\"\n: x"
repo = "org/re'po\"$(LWS_LEADER_ADDRESS)`id`\n---\nkind: Secret"
for g in q["groups"]:
    g["name"], g["model"] = group, model
    for r in g["replicas"]:
        r["id"] = "r\"0\n"
        r["placement"] = [[evil[x.split(":")[0]] + ":" + x.split(":")[1] for x in st] for st in r["placement"]]
q["models"][0]["name"], q["models"][0]["hf_repo"] = model, repo
for r in q["routing"]["ingress"]:
    r["group"] = group
save(q, "hostile.json")
save(c, "hostile-cluster.json")
json.dump({"evil": evil, "repo": repo}, open(f"{tmp}/hostile-names.json", "w"))
PY

# A LeaderWorkerSet has one worker template: two kinds of workers are refused
# unless --lossy, which lets workers land on either GPU type.
for t in k8s kserve; do
	run export -p "$TMP/three.json" --to $t
	expect_rc 1 "three GPU types --to $t"
	expect_err_line '^hexplan: error: group "g0": its worker pods need 2 x l40s and 2 x h100-sxm, and one worker template describes them all: .* \(--lossy writes the closest form\)$' "three GPU types --to $t message"
	run export -p "$TMP/three.json" --to $t --lossy
	expect_rc 0 "three GPU types --to $t --lossy"
	expect_err_line '^hexplan: lossy: group "g0": its worker pods need' "three GPU types --to $t --lossy note"
	cp "$TMP/out" "$TMP/three.$t.yaml"
	valid "$TMP/three.$t.yaml" "three GPU types --to $t --lossy"
	grep -q '"NVIDIA-H100-80GB-HBM3"' "$TMP/three.$t.yaml" && grep -q '"In"' "$TMP/three.$t.yaml" && ok ||
		fail "three GPU types --to $t --lossy: workers take either GPU type"
	run export -p "$TMP/tp.json" --to $t
	expect_rc 1 "TP per stage --to $t"
	expect_err_line '^hexplan: error: group "g0": its stages run TP 2 and 4, and vLLM runs one TP size' "TP per stage --to $t message"
	run export -p $D/baseline.json --to $t --engine sglang
	expect_rc 1 "--engine sglang --to $t"
	expect_err_line "^hexplan: error: the $t export writes vLLM pods: --engine sglang is not expressed" "--engine sglang --to $t message"
done

# Requests split over models reach only the model they name (each vLLM
# serves its own). k8s: a LiteLLM router in front of the groups' Services
# (ConfigMap, Deployment, Service) takes every request from the HTTPRoute;
# its model_list has each group under its model's name and under "hexplan",
# weighted by the plan. KServe (lossy): one route group per model.
run export -p "$TMP/two.json" --to k8s
expect_rc 0 "two models --to k8s"
[ -s "$TMP/err" ] && fail "two models --to k8s: nothing lost, nothing said" || ok
cp "$TMP/out" "$TMP/two.k8s.yaml"
valid "$TMP/two.k8s.yaml" "two models --to k8s"
run export -p "$TMP/two.json" --to kserve
expect_rc 1 "two models --to kserve"
expect_err_line '^hexplan: error: the ingress splits requests over models, and KServe routes a request to the model it names: the LiteLLM router that splits them sends each unit.s share to its path on KServe.s Gateway, whose in-cluster address depends on its implementation \(--gateway-url URL gives it\); without it, the weights hold among the units of each model \(--lossy writes the closest form\)$' "two models --to kserve: message"
run export -p "$TMP/two.json" --to kserve --lossy
expect_rc 0 "two models --to kserve --lossy"
cp "$TMP/out" "$TMP/two.kserve.yaml"
valid "$TMP/two.kserve.yaml" "two models --to kserve"
expect_err_line '^hexplan: lossy: the ingress splits requests over models, and KServe routes a request to the model it names' "two models --to kserve note"
if [ "$have_yaml" = 1 ]; then
	python3 - "$TMP" <<'PY' && ok || fail "two models: each model's requests go to its groups only"
import sys, yaml, random
from collections import Counter
docs = [d for d in yaml.safe_load_all(open(f"{sys.argv[1]}/two.k8s.yaml")) if d]
kinds = {}
for d in docs:
    kinds.setdefault(d["kind"], {})[d["metadata"]["name"]] = d
# what each Service's pods serve: the model of `vllm serve MODEL`
serves = {}
for name, d in kinds["Deployment"].items():
    c = d["spec"]["template"]["spec"]["containers"][0]
    if name != "hexplan-litellm":
        serves[name] = c["command"][2]
for name, svc in kinds["Service"].items():
    if name != "hexplan-litellm":
        assert svc["spec"]["selector"]["hexplan.dev/group"] == name[len("hexplan-"):], svc
# the gateway sends every request to the router
[r] = kinds["HTTPRoute"].values()
[rule] = r["spec"]["rules"]
assert rule["backendRefs"] == [{"name": "hexplan-litellm", "port": 4000}], rule
svc = kinds["Service"]["hexplan-litellm"]
dep = kinds["Deployment"]["hexplan-litellm"]
pod = dep["spec"]["template"]
assert all(pod["metadata"]["labels"][k] == v for k, v in svc["spec"]["selector"].items())
c = pod["spec"]["containers"][0]
assert c["image"] == "ghcr.io/berriai/litellm:main-v1.80.12", c["image"]
assert c["args"] == ["--config", "/etc/litellm/config.yaml", "--port", "4000"], c["args"]
assert c["livenessProbe"]["httpGet"] == {"path": "/health/liveliness", "port": 4000}
assert c["readinessProbe"]["httpGet"] == {"path": "/health/readiness", "port": 4000}
assert pod["spec"]["volumes"][0]["configMap"]["name"] == "hexplan-litellm"
assert c["volumeMounts"][0]["mountPath"] == "/etc/litellm"
cfg = yaml.safe_load(kinds["ConfigMap"]["hexplan-litellm"]["data"]["config.yaml"])
assert cfg["router_settings"] == {"routing_strategy": "simple-shuffle"}, cfg
def backend(dep):
    p = dep["litellm_params"]
    host = p["api_base"].split("//")[1].split(":")[0]
    assert p["api_base"] == f"http://{host}:8000/v1", p
    assert p["model"].startswith("hosted_vllm/"), p
    return host, p["model"][len("hosted_vllm/"):]
# LiteLLM's simple-shuffle: among the deployments of the requested
# model_name, a draw by litellm_params.weight; LiteLLM sends the model
# without its provider prefix to the Service
def route(model, rng):
    cands = [d for d in cfg["model_list"] if d["model_name"] == model]
    assert cands, model
    w = [d["litellm_params"]["weight"] for d in cands]
    return backend(rng.choices(cands, weights=w)[0])
rng = random.Random(1)
for model in set(serves.values()):
    for _ in range(2000):
        host, sent = route(model, rng)
        assert sent == model and serves[host] == model, (model, host, sent)
hits = Counter()
for _ in range(20000):
    host, sent = route("hexplan", rng)
    assert serves[host] == sent, (host, sent)
    hits[host] += 1
plan = {"hexplan-g0": 0.518039, "hexplan-g1": 0.439551, "hexplan-g2": 0.04241}
total = sum(plan.values())
for host, w in plan.items():
    assert abs(hits[host] / 20000 - w / total) < 0.02, (host, hits)
    [d] = [d for d in cfg["model_list"] if d["model_name"] == "hexplan" and backend(d)[0] == host]
    assert abs(d["litellm_params"]["weight"] - w / total) < 1e-5, d
units = [d for d in yaml.safe_load_all(open(f"{sys.argv[1]}/two.kserve.yaml")) if d]
assert all(u["kind"] == "LLMInferenceService" for u in units), "no router with --lossy"
groups = {u["spec"]["model"]["name"]: u["spec"]["router"].get("route") for u in units}
assert groups["org/other-70b"] == {}, groups
PY
fi

# KServe with --gateway-url: the LiteLLM router sends each unit's share to
# the unit's own path on KServe's Gateway, /NAMESPACE/NAME/v1 (KServe's
# managed HTTPRoute sends /NAMESPACE/NAME/v1/chat/completions to the
# service's pool), the namespace expanded by Kubernetes from the pod's.
run export -p "$TMP/two.json" --to kserve --gateway-url https://kserve-gw.example
expect_rc 0 "two models --to kserve --gateway-url"
[ -s "$TMP/err" ] && fail "two models --to kserve --gateway-url: nothing lost, nothing said" || ok
cp "$TMP/out" "$TMP/two.kserve-router.yaml"
valid "$TMP/two.kserve-router.yaml" "two models --to kserve --gateway-url"
if [ "$have_yaml" = 1 ]; then
	python3 - "$TMP/two.kserve-router.yaml" "$TMP/two.json" <<'PY' && ok || fail "two models --to kserve --gateway-url: the plan's split, by the model named"
import json, re, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
plan = json.load(open(sys.argv[2]))
kinds = {}
for d in docs:
    kinds.setdefault(d["kind"], {})[d["metadata"]["name"]] = d
assert set(kinds) == {"LLMInferenceService", "ConfigMap", "Deployment", "Service"}, set(kinds)
svcs = kinds["LLMInferenceService"]
dep = kinds["Deployment"]["hexplan-litellm"]
pod = dep["spec"]["template"]
svc = kinds["Service"]["hexplan-litellm"]
assert all(pod["metadata"]["labels"][k] == v for k, v in svc["spec"]["selector"].items())
[c] = pod["spec"]["containers"]
assert c["image"] == "ghcr.io/berriai/litellm:main-v1.80.12", c["image"]
# the container's environment as Kubernetes makes it: $(VAR) of a variable
# defined before is expanded; the namespace from the downward API
ns = "team-a"
env = {}
for e in c["env"]:
    if "valueFrom" in e:
        assert e["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}, e
        env[e["name"]] = ns
    else:
        env[e["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], e["value"])
cfg = yaml.safe_load(kinds["ConfigMap"]["hexplan-litellm"]["data"]["config.yaml"])
assert cfg["router_settings"] == {"routing_strategy": "simple-shuffle"}, cfg
# KServe's managed route: /NS/NAME/v1/chat/completions to NAME's pool
def kserve(url):
    m = re.match(r"^https://kserve-gw\.example/([^/]+)/([^/]+)/v1/chat/completions$", url)
    assert m and m.group(1) == ns and m.group(2) in svcs, url
    return svcs[m.group(2)]
def litellm(model):
    cands = [d for d in cfg["model_list"] if d["model_name"] == model]
    assert cands, model
    total = sum(d["litellm_params"]["weight"] for d in cands)
    out = {}
    for d in cands:
        lp = d["litellm_params"]
        assert lp["api_base"].startswith("os.environ/"), lp
        base = env[lp["api_base"][len("os.environ/"):]]
        sent = lp["model"][len("hosted_vllm/"):]
        unit = kserve(base + "/chat/completions")
        # what KServe's preset serves: --served-model-name spec.model.name
        assert unit["spec"]["model"]["name"] == sent, (unit["metadata"]["name"], sent)
        name = unit["metadata"]["name"]
        out[name] = out.get(name, 0) + lp["weight"] / total
    return out
shares = {}
for i in plan["routing"]["ingress"]:
    shares["hexplan-" + i["group"]] = shares.get("hexplan-" + i["group"], 0) + i["weight"]
total = sum(shares.values())
got = litellm("hexplan")
assert set(got) == set(shares), (got, shares)
for name, w in shares.items():
    assert abs(got[name] - w / total) < 1e-5, (name, got, shares)
for model in {u["spec"]["model"]["name"] for u in svcs.values()}:
    for name in litellm(model):
        assert svcs[name]["spec"]["model"]["name"] == model, (model, name)
PY
fi
run export -p "$TMP/two.json" --to kserve --gateway-url 'http://gw/$(X)'
expect_rc 2 "--gateway-url with \$ --to kserve"

# A group whose objects would take the router's name is an error.
rename_group "$TMP/two.json" "$TMP/two-clash.json" 1 LiteLLM
run export -p "$TMP/two-clash.json" --to k8s
expect_rc 1 "a group named like the router"
expect_err_line '^hexplan: error: group litellm: its objects would be named hexplan-litellm, the name of the LiteLLM router that splits the plan.s requests over its models$' \
	"a group named like the router: message"

# A stage over two nodes: a LeaderWorkerSet of three pods; KServe counts one
# pod per stage and refuses.
run export -p "$TMP/cross.json" --to k8s
expect_rc 0 "a stage over two nodes --to k8s"
cp "$TMP/out" "$TMP/cross.yaml"
valid "$TMP/cross.yaml" "a stage over two nodes --to k8s"
grep -q '^    size: 3$' "$TMP/cross.yaml" && ok || fail "a stage over two nodes: 3 pods per replica"
run export -p "$TMP/cross.json" --to kserve
expect_rc 1 "a stage over two nodes --to kserve"
expect_err_line '^hexplan: error: group "g0": its replicas spread 2 stages over 3 nodes, and KServe runs one pod per pipeline stage' "a stage over two nodes --to kserve message"

# AMD GPUs: amd.com/gpu, HIP_VISIBLE_DEVICES, the AMD product label.
for t in k8s kserve; do
	run export -p "$TMP/amd.json" --to $t
	expect_rc 0 "AMD --to $t"
	cp "$TMP/out" "$TMP/amd.$t.yaml"
	valid "$TMP/amd.$t.yaml" "AMD --to $t"
	if [ "$have_yaml" = 1 ]; then
		python3 - "$TMP/amd.$t.yaml" <<'PY' && ok || fail "AMD --to $t: pods"
import sys, yaml
pods = []
def find(x):
    if isinstance(x, dict):
        if "containers" in x:
            pods.append(x)
        for v in x.values():
            find(v)
    elif isinstance(x, list):
        for v in x:
            find(v)
find([d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None])
amd = [p for p in pods if "amd.com/gpu" in p["containers"][0]["resources"]["limits"]]
assert len(amd) == 1 and len(pods) == 3
c = amd[0]["containers"][0]
assert c["resources"]["limits"] == {"amd.com/gpu": 4} and c.get("image", "rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909") == "rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909"
assert {"name": "HIP_VISIBLE_DEVICES", "value": "0,1,2,3"} in c["env"]
assert amd[0]["nodeSelector"] == {"amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM"}
PY
	fi
done

# A product that is no label value cannot pin pods.
run export -p "$TMP/product.json" --to k8s
expect_rc 1 "unlabelled GPU"
expect_err_line '^hexplan: error: GPU "l40s" has no valid Kubernetes product label \("NVIDIA L40S \(48 GB\)"\)' "unlabelled GPU message"
run export -p "$TMP/product.json" --to k8s --lossy
expect_rc 0 "unlabelled GPU --lossy"
cp "$TMP/out" "$TMP/product.yaml"
valid "$TMP/product.yaml" "unlabelled GPU --lossy"
[ "$(grep -c 'nvidia.com/gpu.product' "$TMP/product.yaml")" = 2 ] && ok || fail "unlabelled GPU --lossy: its pods are not pinned"

# Names that collide as DNS labels are told apart; uneven weights still sum
# to 1,000,000.
for t in k8s kserve; do
	run export -p "$TMP/names.json" --to $t
	expect_rc 0 "colliding names --to $t"
	cp "$TMP/out" "$TMP/names.$t.yaml"
	valid "$TMP/names.$t.yaml" "colliding names --to $t"
	grep -q 'name: "hexplan-g0-3"' "$TMP/names.$t.yaml" && ok || fail "colliding names --to $t: hexplan-g0-3"
	if [ "$have_yaml" = 1 ]; then
		python3 - "$TMP/names.$t.yaml" <<'PY' && ok || fail "colliding names --to $t: weights"
import sys, yaml
w = []
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "HTTPRoute":
        w = [b["weight"] for b in d["spec"]["rules"][0]["backendRefs"]]
    elif d and d["kind"] == "LLMInferenceService":
        w.append(d["spec"]["router"]["route"]["weight"])
assert w == [333334, 333333, 333333], w
PY
	fi
done

# Hostile names: valid YAML that the schemas accept, the strings intact.
for t in k8s kserve; do
	run export -p "$TMP/hostile.json" -c "$TMP/hostile-cluster.json" --to $t
	expect_rc 0 "hostile names --to $t"
	cp "$TMP/out" "$TMP/hostile.$t.yaml"
	valid "$TMP/hostile.$t.yaml" "hostile names --to $t"
	if [ "$have_yaml" = 1 ]; then
		python3 - "$TMP/hostile.$t.yaml" "$TMP/hostile-names.json" "$t" <<'PY' && ok || fail "hostile names --to $t: strings intact"
import json, shlex, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]
names = json.load(open(sys.argv[2]))
evil, repo = names["evil"], names["repo"]
assert len(docs) == (4 if sys.argv[3] == "k8s" else 1), [d["kind"] for d in docs]
assert all(d["kind"] in ("LeaderWorkerSet", "Service", "PodDisruptionBudget", "HTTPRoute", "LLMInferenceService") for d in docs)
top = docs[0]
place = top["metadata"]["annotations"]["hexplan.dev/placement"]
assert place == f"r\"0\n: {evil['a']}:0 {evil['a']}:1 | {evil['b']}:0 {evil['b']}:1", place
lead = top["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"] if sys.argv[3] == "k8s" else top["spec"]["template"]
cmd = lead["containers"][0]["command"]
assert cmd[:2] == ["sh", "-c"]
# Kubernetes turns $$ into $; the shell then reads the command line
script = cmd[2].replace("$$", "$")
argv = shlex.split(script[script.index("&& exec ") + len("&& exec "):])
assert argv[:3] == ["vllm", "serve", repo], argv[:3]
if sys.argv[3] == "kserve":
    assert top["spec"]["model"] == {"uri": "hf://" + repo, "name": repo}
PY
	fi
done

finish
