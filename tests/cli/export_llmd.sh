#!/bin/sh
# export --to llm-d: plain manifests of an llm-d deployment that lint, pass
# the published CRDs (../shared/tools/validate-k8s) and name everything with
# unique DNS-1123 labels, for every fixture plan.  A disaggregated plan's
# HTTPRoute goes to InferencePools, never to prefill Services; each pool's
# endpoint picker is configured with prefill and decode profiles (llm-d.ai/role
# filters) and records the plan's weights; decode pods run vLLM behind
# llm-d's routing sidecar; colocated plans get one decode profile and no
# sidecar; what llm-d cannot express is refused unless --lossy.
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
[ "$have_yaml" = 1 ] || echo "SKIP: python3-yaml is missing: no checks of the parsed manifests"
[ "$have_validate" = 1 ] || echo "SKIP: $VALIDATE or python3-jsonschema is missing: no schema checks"
[ "$have_lint" = 1 ] || echo "SKIP: yamllint is missing: no lint"

# valid FILE DESC: lints (the stream, every EPP configuration and the
# LiteLLM router's), passes
# the schemas, unique DNS-1123 names.
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
	python3 - "$1" "$TMP/epp" <<'PY' && ok || fail "$2: names and EPP configurations"
import os, re, sys, yaml
dns = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]
assert docs
seen = set()
os.makedirs(sys.argv[2], exist_ok=True)
for d in docs:
    name = d["metadata"]["name"]
    assert len(name) <= 63 and dns.match(name), name
    assert (d["kind"], name) not in seen, ("twice", d["kind"], name)
    seen.add((d["kind"], name))
    if d["kind"] == "ConfigMap":
        # an EPP's configuration, or the LiteLLM router's
        [(key, text)] = d["data"].items()
        assert key == ("config.yaml" if name == "hexplan-litellm" else "epp-config.yaml"), key
        with open(f"{sys.argv[2]}/{name}.yaml", "w") as f:
            f.write(text)
PY
	if [ "$have_lint" = 1 ]; then
		for c in "$TMP"/epp/*.yaml; do
			yamllint -d relaxed "$c" >"$TMP/lint" 2>&1 && ok || fail "$2: yamllint $(basename "$c")"
		done
	fi
	rm -rf "$TMP/epp"
}

# check FILE PLAN DESC PYTHON: PYTHON holds for DOCS, the objects of FILE,
# and PLAN, the plan.
check() {
	[ "$have_yaml" = 1 ] || return 0
	python3 - "$1" "$2" "$4" <<'PY' && ok || fail "$3"
import json, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]
plan = json.load(open(sys.argv[2]))
def kinds(kind):
    return [d for d in docs if d["kind"] == kind]
def named(kind, name):
    [x] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return x
def serving(d):
    # the serving pod templates of a workload (a LeaderWorkerSet's leader)
    if d["kind"] == "Deployment":
        return [d["spec"]["template"]]
    return [d["spec"]["leaderWorkerTemplate"]["leaderTemplate"]]
def workloads():
    return [d for d in docs if d["kind"] in ("Deployment", "LeaderWorkerSet") and "hexplan.dev/group" in d["metadata"]["labels"]]
def config(pool):
    # the EndpointPickerConfig of POOL's picker, and its text
    ref = pool["spec"]["endpointPickerRef"]
    text = named("ConfigMap", ref["name"])["data"]["epp-config.yaml"]
    return yaml.safe_load(text), text
def flag(cmd, name):
    return cmd[cmd.index(name) + 1]
exec(sys.argv[3])
PY
}

# A plan with a route to no group (the dot fixture draws it) is not deployed.
run export -p $D/dot/features.json --to llm-d
expect_rc 1 "features: a route to no group"
expect_err_line '^hexplan: error: [^ ]*/features\.json: /routing/ingress/3/group: no group "nosuch"$' "features: the route's pointer"

# Every fixture plan: exit 0, or a refusal and then --lossy.
for f in $D/baseline.json $D/colocated.json $D/disagg.json $D/pipeline.json $D/dynamo/agg.json \
	$P/mixed-baseline.json $P/mixed-disagg.json $P/mixed-cascade.json; do
	b=$(basename "$f" .json)
	c=""
	[ "$b" = pipeline ] && c="-c $D/pipeline-cluster.json"
	# shellcheck disable=SC2086
	run export -p "$f" $c --to llm-d
	case $b in
	mixed-cascade)
		expect_rc 1 "$b: the cascade is refused"
		expect_err_line '^hexplan: error: the cascade \(2 steps\) is not expressible: requests are not escalated between models \(--lossy writes the closest form\)$' "$b: the cascade refusal"
		# shellcheck disable=SC2086
		run export -p "$f" $c --to llm-d --lossy
		expect_rc 0 "$b --lossy"
		grep -q '^hexplan: lossy: the cascade (2 steps) is not expressible' "$TMP/err" && ok ||
			fail "$b --lossy says the escalation is missing"
		;;
	*)
		expect_rc 0 "$b"
		[ -s "$TMP/err" ] && fail "$b: stderr is not empty" || ok
		;;
	esac
	cp "$TMP/out" "$TMP/$b.yaml"
	valid "$TMP/$b.yaml" "$b --to llm-d"
	# the pools: each selects its pods, its picker is written, the route's
	# weights are the plan's (per model)
	check "$TMP/$b.yaml" "$f" "$b: pools, pickers and route" '
pools = {p["metadata"]["name"]: p for p in kinds("InferencePool")}
assert pools
for p in pools.values():
    assert p["apiVersion"] == "inference.networking.k8s.io/v1"
    assert p["spec"]["targetPorts"] == [{"number": 8000}]
    ref = p["spec"]["endpointPickerRef"]
    assert ref["port"] == {"number": 9002} and ref.get("kind", "Service") == "Service"
    svc = named("Service", ref["name"])
    assert {"name": "grpc", "port": 9002, "targetPort": 9002, "protocol": "TCP", "appProtocol": "http2"} in svc["spec"]["ports"]
    epp = named("Deployment", ref["name"])
    assert svc["spec"]["selector"].items() <= epp["spec"]["template"]["metadata"]["labels"].items()
    c = epp["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0"
    assert flag(c["args"], "--pool-name") == p["metadata"]["name"]
    assert flag(c["args"], "--config-file") == "/etc/epp/epp-config.yaml"
    assert epp["spec"]["template"]["spec"]["volumes"] == [{"name": "epp-config", "configMap": {"name": ref["name"]}}]
    assert epp["spec"]["template"]["spec"]["serviceAccountName"] == ref["name"]
    assert named("RoleBinding", ref["name"])["roleRef"]["name"] == ref["name"]
    [o] = [x for x in kinds("InferenceObjective") if x["spec"]["poolRef"]["name"] == p["metadata"]["name"]]
    assert o["apiVersion"] == "llm-d.ai/v1alpha2"
    sel = p["spec"]["selector"]["matchLabels"]
    pods = [t for d in workloads() for t in serving(d) if sel.items() <= t["metadata"]["labels"].items()]
    assert pods, p["metadata"]["name"]
# every serving pod is in exactly one pool; LeaderWorkerSet workers in none
for d in workloads():
    for t in serving(d):
        assert sum(p["spec"]["selector"]["matchLabels"].items() <= t["metadata"]["labels"].items() for p in pools.values()) == 1
    if d["kind"] == "LeaderWorkerSet":
        assert "hexplan.dev/pool" not in d["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"]
[r] = kinds("HTTPRoute")
assert r["spec"]["parentRefs"] == [{"name": "hexplan-gateway"}]
for rule in r["spec"]["rules"]:
    assert sum(b["weight"] for b in rule["backendRefs"]) == 1000000
    for b in rule["backendRefs"]:
        assert b["group"] == "inference.networking.k8s.io" and b["kind"] == "InferencePool", b
        assert pools[b["name"]]["metadata"]["annotations"]["hexplan.dev/weight"] == str(b["weight"])
        assert "(HTTPRoute weight %d of 1000000)" % b["weight"] in config(pools[b["name"]])[1]
'
done

# The fixtures' route: one rule, the plan's ingress weights summed per pool.
for b in baseline colocated disagg; do
	check "$TMP/$b.yaml" $D/$b.json "$b: the route carries the plan's weights" '
want = {}
for x in plan["routing"]["ingress"]:
    want[x["group"]] = want.get(x["group"], 0) + x["weight"]
total = sum(want.values())
[r] = kinds("HTTPRoute")
[rule] = r["spec"]["rules"]
assert "headers" not in rule["matches"][0]
pools = {p["metadata"]["name"]: p for p in kinds("InferencePool")}
got = 0
for b in rule["backendRefs"]:
    sel = pools[b["name"]]["spec"]["selector"]["matchLabels"]
    groups = {d["metadata"]["labels"]["hexplan.dev/group"] for d in workloads() for t in serving(d) if sel.items() <= t["metadata"]["labels"].items()}
    share = sum(want.get(g, 0) for g in groups) / total
    assert abs(b["weight"] / 1e6 - share) <= 1e-6, (b, share)
    text = config(pools[b["name"]])[1]
    for g in groups:
        assert "#   %s: " % g in text and "ingress weight %g" % want.get(g, 0) in text, (g, text)
    got += 1
assert got == len(pools)
'
done

# Disaggregated: five pools, each a decode group and the prefill group whose
# KV routes feed it; P/D profiles; decode pods behind the routing sidecar.
check "$TMP/disagg.yaml" $D/disagg.json "disagg: P/D pools, profiles and sidecars" '
pools = {p["metadata"]["name"]: p for p in kinds("InferencePool")}
assert sorted(pools) == ["hexplan-d3", "hexplan-d6", "hexplan-d7", "hexplan-d8", "hexplan-d9"], sorted(pools)
assert not kinds("Service") or all(s["metadata"]["name"].endswith("-epp") for s in kinds("Service"))
[r] = kinds("HTTPRoute")
assert sorted(b["name"] for b in r["spec"]["rules"][0]["backendRefs"]) == sorted(pools)
pairs = {"hexplan-d9": "p0", "hexplan-d8": "p1", "hexplan-d7": "p2", "hexplan-d6": "p4", "hexplan-d3": "p5"}
for name, p in pools.items():
    sel = p["spec"]["selector"]["matchLabels"]
    roles = {t["metadata"]["labels"]["hexplan.dev/group"]: t["metadata"]["labels"]["llm-d.ai/role"]
             for d in workloads() for t in serving(d) if sel.items() <= t["metadata"]["labels"].items()}
    assert roles == {name[len("hexplan-"):]: "decode", pairs[name]: "prefill"}, roles
    cfg, text = config(p)
    assert cfg["apiVersion"] == "llm-d.ai/v1alpha1" and cfg["kind"] == "EndpointPickerConfig"
    types = [x["type"] for x in cfg["plugins"]]
    assert {"prefill-filter", "decode-filter", "disagg-profile-handler", "always-disagg-pd-decider"} <= set(types), types
    [h] = [x for x in cfg["plugins"] if x["type"] == "disagg-profile-handler"]
    assert h["parameters"]["deciders"]["prefill"] in types
    prof = {x["name"]: [y["pluginRef"] for y in x["plugins"]] for x in cfg["schedulingProfiles"]}
    assert prof["prefill"][0] == "prefill-filter" and prof["decode"][0] == "decode-filter", prof
    for refs in prof.values():
        assert set(refs) <= set(types) and "prefix-cache-scorer" in refs and "max-score-picker" in refs
for d in workloads():
    [t] = serving(d)
    spec, role = t["spec"], t["metadata"]["labels"]["llm-d.ai/role"]
    vllm = spec["containers"][0]
    kv = {"prefill": "kv_producer", "decode": "kv_consumer"}[role]
    assert flag(vllm["command"], "--kv-transfer-config") == "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"%s\"}" % kv
    if role == "decode":
        [s] = spec["initContainers"]
        assert s["name"] == "routing-sidecar" and s["restartPolicy"] == "Always"
        assert s["image"] == "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0"
        assert s["args"] == ["--port=8000", "--model-server-port=8200", "--kv-connector=nixlv2", "--secure-proxy=false"], s["args"]
        assert s["ports"][0]["containerPort"] == 8000
        assert flag(vllm["command"], "--port") == "8200"
        for pr in ("readinessProbe", "startupProbe", "livenessProbe"):
            assert vllm[pr]["httpGet"]["port"] == 8200, pr
        assert vllm["ports"][0]["containerPort"] == 8200
    else:
        assert "initContainers" not in spec
        assert flag(vllm["command"], "--port") == "8000" and vllm["readinessProbe"]["httpGet"]["port"] == 8000
'

# Colocated: one pool per group, one decode profile, no roles, no sidecar.
check "$TMP/colocated.yaml" $D/colocated.json "colocated: plain profiles" '
pools = kinds("InferencePool")
assert len(pools) == 3
for p in pools:
    cfg, text = config(p)
    types = [x["type"] for x in cfg["plugins"]]
    assert "single-profile-handler" in types and "prefill-filter" not in types, types
    assert "disagg-profile-handler" not in types
    assert [x["name"] for x in cfg["schedulingProfiles"]] == ["default"]
    assert cfg["schedulingProfiles"][0]["plugins"][0]["pluginRef"] == "decode-filter"
for d in workloads():
    [t] = serving(d)
    assert "llm-d.ai/role" not in t["metadata"]["labels"] and "initContainers" not in t["spec"]
'

# The header records the versions the flags were checked against.
head -4 "$TMP/disagg.yaml" | tr '\n' ' ' | grep -q '^# Written by hexplan export --to llm-d for llm-d-router 0.10.0, the Gateway # API Inference Extension 1.6.0 (InferencePool inference.networking.k8s.io/v1, # InferenceObjective llm-d.ai/v1alpha2) and vLLM 0.11.0: images' &&
	ok || fail "the header names the versions"

# --image and --model-cache reach the vLLM pods, not the picker or sidecar.
run export -p $D/disagg.json --to llm-d --image registry.local/vllm:v0.11.0 --model-cache llm-cache
expect_rc 0 "--image --model-cache"
cp "$TMP/out" "$TMP/opts.yaml"
valid "$TMP/opts.yaml" "--image --model-cache"
[ "$(grep -c 'image: "registry.local/vllm:v0.11.0"' "$TMP/opts.yaml")" = 10 ] &&
	[ "$(grep -c 'claimName: "llm-cache"' "$TMP/opts.yaml")" = 10 ] &&
	[ "$(grep -c 'image: "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0"' "$TMP/opts.yaml")" = 5 ] && ok ||
	fail "--image --model-cache: every vLLM pod"
run export -p $D/disagg.json --to llm-d --engine vllm
expect_rc 2 "--engine is a usage error"

# Variants: two prefill groups feeding one decode group; two models.
python3 - "$D" "$TMP" <<'PY' || fail "making the variant plans"
import copy, json, sys
d, tmp = sys.argv[1:]
p = json.load(open(f"{d}/disagg.json"))
for k in p["routing"]["kv"]:
    if k["from"].startswith("p1r"):
        k["to"] = "d9r1"
json.dump(p, open(f"{tmp}/shared.json", "w"))
b = json.load(open(f"{d}/baseline.json"))
m = copy.deepcopy(b["models"][0])
m["name"], m["hf_repo"] = "other", "org/other-70b"
b["models"].append(m)
b["groups"][2]["model"] = "other"
json.dump(b, open(f"{tmp}/two.json", "w"))
PY

run export -p "$TMP/shared.json" --to llm-d
expect_rc 1 "two prefill groups in one pool"
expect_err_line '^hexplan: error: groups p0, p1, d9 exchange KV caches, 2 prefill and 1 decode groups in one InferencePool, and its endpoint picker pairs their pods by load and cache: the plan.s split of the KV routes among them is not kept \(--lossy writes the closest form\)$' "two prefill groups: the message"
run export -p "$TMP/shared.json" --to llm-d --lossy
expect_rc 0 "two prefill groups --lossy"
expect_err_line '^hexplan: lossy: groups p0, p1, d9 exchange KV caches' "two prefill groups --lossy: the note"
cp "$TMP/out" "$TMP/shared.yaml"
valid "$TMP/shared.yaml" "two prefill groups --lossy"

# Requests split over models: the LiteLLM router in front of the pools
# needs the Gateway's in-cluster address (--gateway-url): refused without
# it, or with --lossy one rule per model on the model header, each to that
# model's pools (and no router).
run export -p "$TMP/two.json" --to llm-d
expect_rc 1 "two models"
expect_err_line '^hexplan: error: the ingress splits requests over models, and a request names its model: the LiteLLM router that splits them sends each model.s requests back through the Gateway to its InferencePools, and the Gateway.s in-cluster address depends on its implementation \(--gateway-url URL gives it\); without it, one HTTPRoute rule per model, matching the X-Gateway-Model-Name header .* \(--lossy writes the closest form\)$' "two models: the message"
[ -s "$TMP/out" ] && fail "two models: a refusal writes nothing" || ok
run export -p "$TMP/two.json" --to llm-d --lossy
expect_rc 0 "two models --lossy"
expect_err_line '^hexplan: lossy: the ingress splits requests over models, .*--gateway-url URL gives it' "two models --lossy: the note"
cp "$TMP/out" "$TMP/two.yaml"
valid "$TMP/two.yaml" "two models --lossy"
check "$TMP/two.yaml" "$TMP/two.json" "two models: each model's requests go to its pools" '
[r] = kinds("HTTPRoute")
pools = {p["metadata"]["name"]: p for p in kinds("InferencePool")}
served = {}
for d in workloads():
    [t] = serving(d)
    served[t["metadata"]["labels"]["hexplan.dev/pool"]] = t["spec"]["containers"][0]["command"][2]
rules = r["spec"]["rules"]
assert len(rules) == 2
for rule in rules:
    [h] = rule["matches"][0]["headers"]
    assert h["name"] == "X-Gateway-Model-Name" and h["type"] == "Exact"
    assert {served[pools[b["name"]]["spec"]["selector"]["matchLabels"]["hexplan.dev/pool"]] for b in rule["backendRefs"]} == {h["value"]}
assert [b["name"] for b in rules[1]["backendRefs"]] == ["hexplan-g2"]
assert not [d for d in docs if d["metadata"]["name"] == "hexplan-litellm"]
'

# With --gateway-url: the LiteLLM router (ConfigMap, Deployment, Service)
# takes every request the model rules do not match, and sends each model's
# share back to the Gateway with that model's header; a request reaches
# the pools by the plan's weights, and one naming a model only its pools.
run export -p "$TMP/two.json" --to llm-d --gateway-url http://gw.example:8080/
expect_rc 0 "two models --gateway-url"
[ -s "$TMP/err" ] && fail "two models --gateway-url: nothing lost, nothing said" || ok
cp "$TMP/out" "$TMP/two-router.yaml"
valid "$TMP/two-router.yaml" "two models --gateway-url"
check "$TMP/two-router.yaml" "$TMP/two.json" "two models --gateway-url: the plan's split, by the model named" '
[r] = kinds("HTTPRoute")
rules = r["spec"]["rules"]
pools = {p["metadata"]["name"]: p for p in kinds("InferencePool")}
served = {}
for d in workloads():
    [t] = serving(d)
    served[t["metadata"]["labels"]["hexplan.dev/pool"]] = t["spec"]["containers"][0]["command"][2]
cfg = yaml.safe_load(named("ConfigMap", "hexplan-litellm")["data"]["config.yaml"])
assert cfg["router_settings"] == {"routing_strategy": "simple-shuffle"}, cfg
dep = named("Deployment", "hexplan-litellm")
svc = named("Service", "hexplan-litellm")
pod = dep["spec"]["template"]
assert all(pod["metadata"]["labels"][k] == v for k, v in svc["spec"]["selector"].items())
[c] = pod["spec"]["containers"]
assert c["image"] == "ghcr.io/berriai/litellm:main-v1.80.12", c["image"]
assert c["args"] == ["--config", "/etc/litellm/config.yaml", "--port", "4000"], c["args"]
assert svc["spec"]["ports"][0]["port"] == 4000
# the Gateway: of the rules whose matches hold, the one with the most
# header matches wins (all match the path prefix "/")
def gateway(headers):
    best = None
    for rule in rules:
        for m in rule["matches"]:
            assert m["path"] == {"type": "PathPrefix", "value": "/"}, m
            hs = m.get("headers", [])
            if all(headers.get(h["name"]) == h["value"] for h in hs):
                if best is None or len(hs) > best[0]:
                    best = (len(hs), rule)
    assert best, headers
    return best[1]["backendRefs"]
def pool_split(refs):
    total = sum(b["weight"] for b in refs)
    return {b["name"]: b["weight"] / total for b in refs}
# LiteLLM: simple-shuffle draws among the deployments of the requested
# model_name by weight and sends the model (less hosted_vllm/) to api_base
# with extra_headers
def litellm(model):
    cands = [d for d in cfg["model_list"] if d["model_name"] == model]
    assert cands, model
    total = sum(d["litellm_params"]["weight"] for d in cands)
    out = {}
    for d in cands:
        lp = d["litellm_params"]
        assert lp["api_base"] == "http://gw.example:8080/v1", lp
        sent = lp["model"][len("hosted_vllm/"):]
        assert lp["model"].startswith("hosted_vllm/")
        assert lp["extra_headers"] == {"X-Gateway-Model-Name": sent}, lp
        refs = gateway(lp["extra_headers"])
        # never back to the router: that would loop
        assert all(b.get("kind") == "InferencePool" for b in refs), refs
        for name, f in pool_split(refs).items():
            key = pools[name]["spec"]["selector"]["matchLabels"]["hexplan.dev/pool"]
            assert served[key] == sent, (name, sent)
            out[name] = out.get(name, 0) + lp["weight"] / total * f
    return out
# a client request without the header reaches the router
assert gateway({}) == [{"name": "hexplan-litellm", "port": 4000}], gateway({})
shares = {}
for i in plan["routing"]["ingress"]:
    shares["hexplan-" + i["group"]] = shares.get("hexplan-" + i["group"], 0) + i["weight"]
total = sum(shares.values())
got = litellm("hexplan")
assert set(got) == set(shares), (got, shares)
for name, w in shares.items():
    assert abs(got[name] - w / total) < 1e-5, (name, got, shares)
for model in set(served.values()):
    for name in litellm(model):
        key = pools[name]["spec"]["selector"]["matchLabels"]["hexplan.dev/pool"]
        assert served[key] == model, (model, name)
'
[ "$(grep -c '"ghcr.io/berriai/litellm:main-v1.80.12"' "$TMP/two-router.yaml")" = 1 ] && ok ||
	fail "two models --gateway-url: one LiteLLM container"

# --gateway-url: a URL of the Gateway itself, for kserve and llm-d; a group
# named like the router is an error.
for u in gw.example http:// 'http://gw/v1' 'http://gw/$(X)' 'https://gw x'; do
	run export -p "$TMP/two.json" --to llm-d --gateway-url "$u"
	expect_rc 2 "--gateway-url $u"
	head -1 "$TMP/err" | grep -qxF "hexplan: error: --gateway-url must be an http:// or https:// URL, not \"$u\"" && ok ||
		fail "--gateway-url $u: message"
done
run export -p "$TMP/two.json" --to k8s --gateway-url http://gw
expect_rc 2 "--gateway-url --to k8s"
[ "$(head -1 "$TMP/err")" = "hexplan: error: --gateway-url is for --to kserve or llm-d" ] && ok ||
	fail "--gateway-url --to k8s: message"
rename_group "$TMP/two.json" "$TMP/two-clash.json" 1 LiteLLM
run export -p "$TMP/two-clash.json" --to llm-d --gateway-url http://gw
expect_rc 1 "a group named like the router"
expect_err_line '^hexplan: error: group litellm: its objects would be named hexplan-litellm, the name of the LiteLLM router that splits the plan.s requests over its models$' \
	"a group named like the router: message"

# int4 weights without a pre-quantized checkpoint: the message every
# target gives; with --checkpoint the pods serve that repository.
python3 - $D/baseline.json "$TMP/int4.json" <<'PY' || fail "making the int4 plan"
import json, sys
p = json.load(open(sys.argv[1]))
for g in p["groups"]:
    g["weights"] = "int4"
json.dump(p, open(sys.argv[2], "w"), indent=2)
PY
run export -p "$TMP/int4.json" --to llm-d
expect_rc 1 "int4 refused"
expect_err_line '^hexplan: error: group "g0": int4 weights need a pre-quantized checkpoint \(--checkpoint REPO, an AWQ or GPTQ repository of llama-3.1-70b\): the engine would serve "meta-llama/Llama-3.1-70B-Instruct" as published \(--lossy writes the closest form\)$' "int4: the shared message"
[ -s "$TMP/out" ] && fail "int4: a refusal writes nothing" || ok
run export -p "$TMP/int4.json" --to llm-d --checkpoint hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4
expect_rc 0 "int4 --checkpoint"
grep -q '"hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4"' "$TMP/out" &&
	! grep -q '"meta-llama/Llama-3.1-70B-Instruct"' "$TMP/out" && ok || fail "int4 --checkpoint: the pods serve it"

finish
