#!/bin/sh
# export --to launch: JSON lines and shell scripts for vLLM and SGLang,
# compared with golden files; refusals and --lossy; multi-file output; and
# scripts that stay safe when every name in the inputs is hostile.
# HX_REGEN=1 rewrites the golden files (check them by eye before committing).
. "$(dirname "$0")/../lib.sh"

D=tests/data/export
G=$D/launch
PC=$D/pipeline-cluster.json
REGEN=${HX_REGEN:-}

# bundle DIR: every file of DIR, sorted, with its name and whether it is
# executable, as one text.
bundle() {
	for f in "$1"/*; do
		if [ -x "$f" ]; then m=x; else m=-; fi
		printf '==> %s [%s] <==\n' "$(basename "$f")" "$m"
		cat "$f"
	done
}

# golden NAME FILE DESCRIPTION: FILE equals $G/NAME (or becomes it).
golden() {
	if [ -n "$REGEN" ]; then
		cp "$2" "$G/$1"
		ok
	elif cmp -s "$2" "$G/$1"; then
		ok
	else
		fail "$3: differs from $G/$1"
		diff "$G/$1" "$2" | head -10 >&2
	fi
}

# stderr_golden NAME DESCRIPTION: stderr is empty (no NAME golden) or equals
# $G/NAME, and every line is a "hexplan: lossy:" line.
stderr_golden() {
	if [ -n "$REGEN" ] && [ -s "$TMP/err" ]; then
		cp "$TMP/err" "$G/$1"
	fi
	if [ -f "$G/$1" ]; then
		if cmp -s "$TMP/err" "$G/$1" && ! grep -qv '^hexplan: lossy: ' "$TMP/err"; then
			ok
		else
			fail "$2: stderr differs from $G/$1"
		fi
	elif [ -s "$TMP/err" ]; then
		fail "$2: unexpected stderr"
	else
		ok
	fi
}

mkdir -p "$G"
for case in baseline:vllm: baseline:sglang:--lossy pipeline:vllm: pipeline:sglang: \
	disagg:vllm:--lossy disagg:sglang:--lossy; do
	plan=${case%%:*}
	rest=${case#*:}
	engine=${rest%%:*}
	lossy=${rest#*:}
	set -- -p "$D/$plan.json" --to launch --engine "$engine"
	[ "$plan" = pipeline ] && set -- "$@" -c "$PC"
	[ -n "$lossy" ] && set -- "$@" "$lossy"
	name=$plan-$engine

	# JSON (the default format): one object per line
	run export "$@"
	expect_rc 0 "$name json"
	golden "$name.jsonl" "$TMP/out" "$name json"
	stderr_golden "$name.err" "$name json stderr"
	python3 - "$TMP/out" <<'PY' && ok || fail "$name json: shape, ports and devices"
import json, sys
seen, procs, routers = set(), 0, 0
for line in open(sys.argv[1]):
    o = json.loads(line)
    if "router" in o:
        routers += 1
        assert o["router"]["argv"] and o["router"]["port"] > 0, o
        continue
    procs += 1
    assert set(o) == {"group", "replica", "stage", "node", "host", "gpus", "env", "argv", "url"}, o
    dev = o["env"].get("CUDA_VISIBLE_DEVICES", o["env"].get("HIP_VISIBLE_DEVICES"))
    assert dev == ",".join(map(str, o["gpus"])), o
    assert o["argv"][0] in ("vllm", "python"), o
    if o["url"] is not None:
        port = int(o["argv"][o["argv"].index("--port") + 1])
        assert o["url"] == "http://%s:%d" % (o["host"], port), o
        assert (o["host"], port) not in seen, o
        seen.add((o["host"], port))
    else:
        assert "--port" not in o["argv"], o
assert procs > 0 and routers > 0, (procs, routers)
PY

	# Shell scripts, one per host, and the router's
	rm -rf "$TMP/sh"
	run export "$@" --format sh -o "$TMP/sh"
	expect_rc 0 "$name sh"
	bundle "$TMP/sh" >"$TMP/bundle"
	golden "$name.sh.txt" "$TMP/bundle" "$name sh"
	stderr_golden "$name.err" "$name sh stderr"
	bad=
	for f in "$TMP"/sh/*.sh; do
		head -2 "$f" | tr '\n' ' ' | grep -q '^#!/bin/bash ' || bad="$bad $f(shebang)"
		grep -qx 'set -eu' "$f" || bad="$bad $f(set -eu)"
		[ -x "$f" ] || bad="$bad $f(not executable)"
		bash -n "$f" || bad="$bad $f(bash -n)"
		grep -qx 'wait -n || status=$?' "$f" || bad="$bad $f(wait -n)"
		if command -v shellcheck >/dev/null 2>&1; then
			shellcheck -s bash "$f" >&2 || bad="$bad $f(shellcheck)"
		fi
	done
	# servers pass the token; the routers start once every server is healthy
	for f in "$TMP"/sh/launch-*.sh; do
		grep -qx '	export HF_TOKEN' "$f" || bad="$bad $f(HF_TOKEN)"
	done
	awk '/curl -fsS -o \/dev\/null "\$url\/health"/ { h = NR } / &$/ && !r { r = NR }
		END { exit !(h && r > h) }' "$TMP/sh/router.sh" || bad="$bad router.sh(health first)"
	[ -z "$bad" ] && ok || fail "$name sh scripts:$bad"
done
[ -n "$REGEN" ] && echo "golden files rewritten in $G" >&2

# Ports are per host, in order of appearance: h100-0 holds g0r0..g0r3.
run export -p $D/baseline.json --to launch
python3 - "$TMP/out" <<'PY' && ok || fail "ports 8000 + k per host"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
h = [o["url"] for o in lines if o.get("host") == "h100-0"]
assert h == ["http://h100-0:%d" % (8000 + k) for k in range(4)], h
r = lines[-1]["router"]
assert r["engine"] == "litellm", r
w = {}
for d in r["config"]["model_list"]:
    w[d["litellm_params"]["api_base"]] = d["litellm_params"]["weight"]
assert len(w) == 28, len(w)
assert abs(sum(w.values()) - 1) < 1e-4, sum(w.values())
assert abs(w["http://h100-0:8000/v1"] - 0.518039 / 8) < 1e-6
PY

# The multi-node pipeline: rank 0 serves, rank 1 is headless, uneven layers.
run export -p $D/pipeline.json -c $PC --to launch
python3 - "$TMP/out" <<'PY' && ok || fail "pipeline: two nodes, headless rank, layer split"
import json, sys
a, b, r = [json.loads(l) for l in open(sys.argv[1])]
for o in (a, b):
    v = o["argv"]
    assert v[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct"], v
    assert v[v.index("--tensor-parallel-size") + 1] == "2"
    assert v[v.index("--pipeline-parallel-size") + 1] == "2"
    assert v[v.index("--nnodes") + 1] == "2"
    assert v[v.index("--master-addr") + 1] == "10.0.0.1"
    assert o["env"]["VLLM_PP_LAYER_PARTITION"] == "41,39"
assert a["host"] == "10.0.0.1" and a["url"] == "http://10.0.0.1:8000" and "--headless" not in a["argv"]
assert b["host"] == "10.0.0.2" and b["url"] is None and "--headless" in b["argv"]
assert a["argv"][a["argv"].index("--node-rank") + 1] == "0"
assert b["argv"][b["argv"].index("--node-rank") + 1] == "1"
PY

# Refusals name what cannot be expressed, on one line, and write nothing.
run export -p $D/baseline.json --to launch --engine sglang
expect_rc 1 "sglang_router has no weights"
expect_err_line '^hexplan: error: model llama-3.1-70b: sglang_router has no routing weights .*\(with --lossy ' "weights refusal message"
[ -s "$TMP/out" ] && fail "a refusal writes nothing" || ok
run export -p $D/disagg.json --to launch
expect_rc 1 "vllm-router cannot follow KV routes"
expect_err_line '^hexplan: error: model llama-3.1-8b: vllm-router .* KV routes' "KV routes refusal message"
run export -p $D/disagg.json --to launch --engine sglang --format sh -o "$TMP/refused"
expect_rc 1 "sglang disagg refused"
[ -e "$TMP/refused" ] && fail "a refusal creates no directory" || ok

# Per-stage TP: refused by both engines, smallest TP with --lossy.
python3 - $D/pipeline.json "$TMP/tp.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
g = p["groups"][0]
g["stages"][1]["tp"] = 1
g["replicas"][0]["placement"][1] = ["b:0"]
json.dump(p, open(sys.argv[2], "w"), indent=2)
PY
for e in vllm sglang; do
	run export -p "$TMP/tp.json" --to launch --engine $e
	expect_rc 1 "per-stage TP refused ($e)"
	expect_err_line '^hexplan: error: group g0: (vLLM|SGLang) needs the same TP size in every stage, this group has 2, 1 \(with --lossy the launch commands run TP 1 ' "per-stage TP message ($e)"
done
run export -p "$TMP/tp.json" --to launch --lossy
expect_rc 0 "per-stage TP with --lossy"
expect_err_line '^hexplan: lossy: group g0: vLLM needs the same TP size in every stage.*run TP 1 on the first 1 GPUs of every stage instead$' "lossy line"
python3 - "$TMP/out" <<'PY' && ok || fail "lossy TP runs TP 1 on one GPU per stage"
import json, sys
procs = [json.loads(l) for l in open(sys.argv[1])][:-1]
assert [o["gpus"] for o in procs] == [[0], [0]], procs
for o in procs:
    assert o["argv"][o["argv"].index("--tensor-parallel-size") + 1] == "1"
PY

# AMD GPUs are made visible with HIP_VISIBLE_DEVICES; a replica mixing
# vendors is refused.
python3 - $D/pipeline.json "$TMP/amd.json" "$TMP/mixed.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["gpus"][1]["vendor"] = "amd"
json.dump(p, open(sys.argv[3], "w"), indent=2)
p["gpus"][0]["vendor"] = "amd"
json.dump(p, open(sys.argv[2], "w"), indent=2)
PY
run export -p "$TMP/amd.json" --to launch
expect_rc 0 "AMD plan"
python3 - "$TMP/out" <<'PY' && ok || fail "HIP_VISIBLE_DEVICES"
import json, sys
for o in [json.loads(l) for l in open(sys.argv[1])][:-1]:
    assert o["env"].get("HIP_VISIBLE_DEVICES") == "0,1" and "CUDA_VISIBLE_DEVICES" not in o["env"], o
PY
run export -p "$TMP/mixed.json" --to launch
expect_rc 1 "mixed vendors refused"
expect_err_line '^hexplan: error: group g0: 1 replica\(s\) \(first g0r0\) mix NVIDIA and AMD GPUs' "mixed vendors message"

# --engine-version: a replica over several nodes runs without Ray from vLLM
# 0.11.1 on (--nnodes, --node-rank, --master-addr, --master-port), the
# default; for an older vLLM the launch commands would start no Ray cluster,
# so the export refuses, even with --lossy; one node per replica is the same
# for any release; the scripts record the release.
run export -p $D/pipeline.json -c "$PC" --to launch --engine-version 0.11.0
expect_rc 1 "multi-node replica for vLLM 0.11.0"
expect_err_line '^hexplan: error: group g0: replica g0r0 spans 2 nodes, but vLLM 0\.11\.0 has no --nnodes or --node-rank \(vLLM runs a replica over several nodes without Ray since 0\.11\.1: give --engine-version 0\.11\.1 or later, or export --to k8s, whose LeaderWorkerSets start Ray\)$' \
	"multi-node replica for vLLM 0.11.0: message"
[ -s "$TMP/out" ] && fail "multi-node for vLLM 0.11.0: a refusal writes nothing" || ok
run export -p $D/pipeline.json -c "$PC" --to launch --engine-version 0.11.0 --lossy
expect_rc 1 "multi-node replica for vLLM 0.11.0 --lossy"
run export -p $D/pipeline.json -c "$PC" --to launch --engine-version 0.11.1
expect_rc 0 "multi-node replica for vLLM 0.11.1"
cmp -s "$TMP/out" "$G/pipeline-vllm.jsonl" && ok || fail "--engine-version 0.11.1 is the default"
run export -p $D/pipeline.json -c "$PC" --to launch --engine sglang --engine-version 0.5.0
expect_rc 0 "SGLang 0.5.0"
cmp -s "$TMP/out" "$G/pipeline-sglang.jsonl" && ok || fail "--engine-version 0.5.0 is SGLang's default"
run export -p $D/pipeline.json -c "$PC" --to launch --engine sglang --engine-version 0.4.9
expect_rc 2 "SGLang older than the oldest"
head -1 "$TMP/err" | grep -qxF 'hexplan: error: --engine-version 0.4.9: SGLang releases before 0.5.0 are not supported (their flags were not checked)' &&
	ok || fail "SGLang older than the oldest: message"
run export -p $D/baseline.json --to launch --engine-version 0.10.1 --format sh -o "$TMP/v0101"
expect_rc 0 "one node per replica for vLLM 0.10.1"
for f in "$TMP"/v0101/*.sh; do
	sed -n 3p "$f" | grep -qx '# Written by hexplan export --to launch --engine vllm for vLLM 0.10.1.' ||
		fail "--engine-version: $(basename "$f") does not record the release"
done
ok

# int4 weights: the published checkpoint is BF16, so every target refuses
# with one message (the memory the plan sized would not hold it) unless
# --checkpoint names a pre-quantized repository, which the engines serve.
python3 - $D/baseline.json "$TMP/int4.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
for g in p["groups"]:
    g["weights"] = "int4"
json.dump(p, open(sys.argv[2], "w"), indent=2)
PY
int4='hexplan: error: group "g0": int4 weights need a pre-quantized checkpoint (--checkpoint REPO, an AWQ or GPTQ repository of llama-3.1-70b): the engine would serve "meta-llama/Llama-3.1-70B-Instruct" as published'
for t in launch k8s kserve; do
	run export -p "$TMP/int4.json" --to $t
	expect_rc 1 "int4 --to $t refused"
	case $(cat "$TMP/err") in
	"$int4 ("*) ok ;;
	*) fail "int4 --to $t: message: $(cat "$TMP/err")" ;;
	esac
	[ -s "$TMP/out" ] && fail "int4 --to $t: a refusal writes nothing" || ok
	run export -p "$TMP/int4.json" --to $t --checkpoint hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4
	expect_rc 0 "int4 --to $t --checkpoint"
	grep -q 'hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4' "$TMP/out" &&
		! grep -q '"meta-llama/Llama-3.1-70B-Instruct"' "$TMP/out" && ok ||
		fail "int4 --to $t --checkpoint: serves the quantized repository"
done
run export -p "$TMP/int4.json" --to launch --lossy
expect_rc 0 "int4 --to launch --lossy"
grep -q '^hexplan: lossy: group "g2": int4 weights need a pre-quantized checkpoint .*; the launch commands serve the published checkpoint instead$' "$TMP/err" &&
	ok || fail "int4 --lossy note"
run export -p "$TMP/int4.json" --to launch --checkpoint -x
expect_rc 2 "--checkpoint starting with '-'"
run export -p "$TMP/int4.json" --to dot --checkpoint a/b
expect_rc 2 "--checkpoint --to dot"
grep -q '^hexplan: error: --checkpoint is for --to launch, k8s, kserve, llm-d or dynamo$' "$TMP/err" &&
	ok || fail "--checkpoint --to dot message"

# A split between models: one LiteLLM model group, "hexplan", holds every
# replica of every model weighted by its share of all the requests, so
# clients ask for one name and the split happens as planned; each model's
# own deployments still serve requests that name it.  SGLang has no such
# router: refused, and with --lossy each request goes to the model it names.
python3 - $D/baseline.json "$TMP/two.json" <<'PY'
import copy, json, sys
p = json.load(open(sys.argv[1]))
m = copy.deepcopy(p["models"][0])
m["name"], m["hf_repo"] = "other", "org/other-70b"
p["models"].append(m)
p["groups"][2]["model"] = "other"
json.dump(p, open(sys.argv[2], "w"), indent=2)
PY
run export -p "$TMP/two.json" --to launch
expect_rc 0 "two models --to launch"
[ -s "$TMP/err" ] && fail "two models: stderr is not empty" || ok
python3 - "$TMP/out" "$TMP/two.json" <<'PY' && ok || fail "two models: the model group and each model's deployments"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
plan = json.load(open(sys.argv[2]))
serves = {o["url"] + "/v1": o["argv"][2] for o in lines if "router" not in o and o["url"]}
repo = {"llama-3.1-70b": "meta-llama/Llama-3.1-70B-Instruct", "other": "org/other-70b"}
[r] = [o["router"] for o in lines if "router" in o]
assert r["config"]["router_settings"] == {"routing_strategy": "simple-shuffle"}
own, group = {}, {}
for d in r["config"]["model_list"]:
    lp = d["litellm_params"]
    assert lp["model"] == "hosted_vllm/" + serves[lp["api_base"]], d
    if d["model_name"] == "hexplan":
        m = [k for k, v in repo.items() if v == serves[lp["api_base"]]][0]
        group[m] = group.get(m, 0) + lp["weight"]
    else:
        assert serves[lp["api_base"]] == repo[d["model_name"]], d
        own[d["model_name"]] = own.get(d["model_name"], 0) + 1
assert own == {"llama-3.1-70b": 24, "other": 4}, own
# the group's weights per model are the plan's fractions
share = {"llama-3.1-70b": 0, "other": 0}
model = {g["name"]: g["model"] for g in plan["groups"]}
for x in plan["routing"]["ingress"]:
    share[model[x["group"]]] += x["weight"]
for m in repo:
    assert abs(group[m] - share[m]) < 1e-5, (group, share)
PY
run export -p "$TMP/two.json" --to launch --format sh -o "$TMP/two-sh"
expect_rc 0 "two models --format sh"
grep -q '^# Clients ask for model "hexplan" to be spread over the plan.s models$' "$TMP/two-sh/router.yaml" &&
	[ "$(grep -c 'model_name: "hexplan"' "$TMP/two-sh/router.yaml")" = 28 ] && ok ||
	fail "two models --format sh: the group in router.yaml"
run export -p "$TMP/two.json" --to launch --engine sglang
expect_rc 1 "two models --engine sglang"
expect_err_line '^hexplan: error: the plan splits requests between models \(llama-3.1-70b 0.95759, other 0.04241\), and only vLLM.s LiteLLM router, in front of aggregated groups, spreads one model group over several models \(with --lossy the launch commands route each request to the model it names\)$' "two models --engine sglang: message"
run export -p "$TMP/two.json" --to launch --engine sglang --lossy
expect_rc 0 "two models --engine sglang --lossy"

# Several files need a directory; output is written atomically into it.
run export -p $D/baseline.json --to launch --format sh
expect_rc 2 "several files to stdout"
grep -q 'give -o DIR' "$TMP/err" && ok || fail "several files: message"
mkdir "$TMP/o"
echo old >"$TMP/o/router.sh"
ln "$TMP/o/router.sh" "$TMP/old-router"
run export -p $D/pipeline.json -c $PC --to launch --format sh -o "$TMP/o"
expect_rc 0 "sh into an existing directory"
[ "$(ls "$TMP/o" | tr '\n' ' ')" = "launch-10-0-0-1.sh launch-10-0-0-2.sh router.sh router.yaml " ] &&
	ok || fail "files in -o DIR: $(ls -a "$TMP/o" | tr '\n' ' ')"
[ "$(cat "$TMP/old-router")" = old ] && grep -q litellm "$TMP/o/router.sh" &&
	ok || fail "router.sh replaced by rename, not rewritten in place"
[ -x "$TMP/o/launch-10-0-0-1.sh" ] && [ -x "$TMP/o/router.sh" ] && ok || fail "scripts are executable"
run export -p $D/pipeline.json -c $PC --to launch -o "$TMP/one.jsonl"
expect_rc 0 "json to a file"
hx export -p $D/pipeline.json -c $PC --to launch | cmp -s - "$TMP/one.jsonl" && ok || fail "json file = stdout"

# A node's "interface" reaches its processes as NCCL's and Gloo's socket
# interface; a name that is not one is refused with its place.
python3 - $PC "$TMP/if-cluster.json" "$TMP/if-bad.json" "$TMP/if-long.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["nodes"][0]["interface"], c["nodes"][1]["interface"] = "ens5", "bond0.100"
json.dump(c, open(sys.argv[2], "w"))
c["nodes"][1]["interface"] = "-eth0"
json.dump(c, open(sys.argv[3], "w"))
c["nodes"][1]["interface"] = "e" * 16
json.dump(c, open(sys.argv[4], "w"))
PY
run export -p $D/pipeline.json -c "$TMP/if-cluster.json" --to launch
expect_rc 0 "interfaces"
python3 - "$TMP/out" <<'PY' && ok || fail "interfaces: NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME per node"
import json, sys
a, b, r = [json.loads(l) for l in open(sys.argv[1])]
for o, i in ((a, "ens5"), (b, "bond0.100")):
    assert o["env"]["NCCL_SOCKET_IFNAME"] == i and o["env"]["GLOO_SOCKET_IFNAME"] == i, o["env"]
    assert "UCX_NET_DEVICES" not in o["env"], o["env"]
PY
run export -p $D/pipeline.json -c "$TMP/if-bad.json" --to launch
expect_rc 1 "interface starting with '-'"
expect_err_line "^hexplan: error: $TMP/if-bad.json: /nodes/1/interface: \"-eth0\" is not a network interface name \(letters, digits, '_', '.', ':' and '-', not starting with '-'\)$" "bad interface message"
run export -p $D/pipeline.json -c "$TMP/if-long.json" --to launch
expect_rc 1 "interface of 16 characters"
expect_err_line "^hexplan: error: $TMP/if-long.json: /nodes/1/interface: must be a network interface name of 1 to 15 characters$" "long interface message"

# Options that start with '-' would be read as flags: refused.
python3 - $PC "$TMP/dash-cluster.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["nodes"][0]["host"] = "--trust-remote-code"
json.dump(c, open(sys.argv[2], "w"))
PY
run export -p $D/pipeline.json -c "$TMP/dash-cluster.json" --to launch
expect_rc 1 "host starting with '-'"
expect_err_line "^hexplan: error: host --trust-remote-code: a host that starts with '-' would be read as an option$" "dash host message"

# ---- Hostile names: nothing in them is run, each reaches argv whole. ----
python3 - $D/pipeline.json $PC "$TMP/evil.json" "$TMP/evil-cluster.json" "$TMP/evil-expect.json" <<'PY'
import json, sys
p, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
N1, N2 = "a b$(touch pwned)", "it's \"b\";`touch pwned`"
# The strings that reach every script have balanced quotes, so that a
# missing quote would run them rather than only break the script's syntax.
H1, H2 = "x;rm -rf y $(touch pwned)", "h \"$(touch pwned)\" 'q' `touch pwned`"
MODEL, REPO = "m'$(touch pwned)\"x;rm -rf y\"", "org/a b;$(touch pwned);touch pwned"
GROUP, REPLICA = "g;$(touch pwned)", "r'0 \"x\"\n# evil"
c["nodes"][0].update(name=N1, host=H1)
c["nodes"][1].update(name=N2, host=H2)
p["models"][0].update(name=MODEL, hf_repo=REPO)
g = p["groups"][0]
g.update(name=GROUP, model=MODEL)
g["replicas"][0]["id"] = REPLICA
g["replicas"][0]["placement"] = [[N1 + ":0", N1 + ":1"], [N2 + ":0", N2 + ":1"]]
p["routing"]["ingress"][0]["group"] = GROUP
json.dump(p, open(sys.argv[3], "w"), indent=2)
json.dump(c, open(sys.argv[4], "w"), indent=2)
json.dump({"H1": H1, "H2": H2, "MODEL": MODEL, "REPO": REPO}, open(sys.argv[5], "w"))
PY
run check -p "$TMP/evil.json" -c "$TMP/evil-cluster.json"
expect_rc 0 "check accepts the hostile plan"

STUB=$TMP/stub
mkdir "$STUB"
for s in vllm python litellm vllm-router; do
	cat >"$STUB/$s" <<'EOF'
#!/bin/sh
f=$(mktemp "$HX_STUB_LOG/call.XXXXXX")
{
	printf 'PROG=%s\n' "${0##*/}"
	printf 'ENV=%s\n' "${CUDA_VISIBLE_DEVICES-}"
	for a in "$@"; do printf 'ARG=%s\n' "$a"; done
} >"$f"
EOF
	chmod +x "$STUB/$s"
done
# the servers answer at once; kill (run by xargs) leaves the stubs to log
printf '#!/bin/sh\nexit 0\n' >"$STUB/curl"
printf '#!/bin/sh\nexit 0\n' >"$STUB/kill"
chmod +x "$STUB/curl" "$STUB/kill"

for e in vllm sglang; do
	rm -rf "$TMP/evil-$e" "$TMP/log-$e" "$TMP/work-$e"
	mkdir "$TMP/log-$e" "$TMP/work-$e"
	run export -p "$TMP/evil.json" -c "$TMP/evil-cluster.json" --to launch --engine $e --format sh -o "$TMP/evil-$e"
	expect_rc 0 "hostile names, $e scripts"
	bad=
	n=0
	for f in "$TMP/evil-$e"/*.sh; do
		n=$((n + 1))
		bash -n "$f" || bad="$bad $f(bash -n)"
		grep -qx 'wait -n || status=$?' "$f" || bad="$bad $f(wait -n)"
		if command -v shellcheck >/dev/null 2>&1; then
			shellcheck -s bash "$f" >&2 || bad="$bad $f(shellcheck)"
		fi
		# a process that exits (the stubs do at once) fails the script
		(cd "$TMP/work-$e" && HX_STUB_LOG="$TMP/log-$e" PATH="$STUB:/usr/bin:/bin" bash "$f") 2>"$TMP/run-err"
		rc=$?
		[ "$rc" -eq 1 ] && grep -q ': a process exited (status 0): stopping the others$' "$TMP/run-err" ||
			bad="$bad $f(run: exit $rc)"
	done
	[ "$n" -eq 3 ] && [ -z "$bad" ] && ok || fail "hostile $e scripts ($n):$bad"
	if [ -z "$(ls -A "$TMP/work-$e")" ] && [ -z "$(find "$TMP" . -name pwned 2>/dev/null)" ]; then
		ok
	else
		fail "hostile $e scripts created files: $(ls -A "$TMP/work-$e" | tr '\n' ' ')"
	fi
	python3 - "$TMP/log-$e" "$TMP/evil-expect.json" $e "$TMP/evil-$e" <<'PY' && ok || fail "hostile $e: argv intact"
import json, os, sys
log, x, engine, out = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
calls = []
for f in sorted(os.listdir(log)):
    lines = open(os.path.join(log, f)).read().split("\n")[:-1]
    prog, env = lines[0][5:], lines[1][4:]
    calls.append((prog, env, [l[4:] for l in lines[2:]]))
def opt(argv, flag):
    return argv[argv.index(flag) + 1]
servers = [c for c in calls if c[0] in ("vllm", "python") and "sglang_router.launch_router" not in c[2]]
routers = [c for c in calls if c not in servers]
assert len(servers) == 2 and len(routers) == 1, calls
for prog, env, argv in servers:
    assert env == "0,1", env
    if engine == "vllm":
        assert argv[:2] == ["serve", x["REPO"]], argv
        assert opt(argv, "--master-addr") == x["H1"], argv
    else:
        assert opt(argv, "--model-path") == x["REPO"], argv
        assert opt(argv, "--dist-init-addr") == x["H1"] + ":29500", argv
prog, env, argv = routers[0]
if engine == "vllm":
    assert prog == "litellm" and opt(argv, "--config") == os.path.join(os.path.realpath(out), "router.yaml"), argv
    y = {}
    for l in open(os.path.join(out, "router.yaml")):
        k, _, v = l.strip().lstrip("- ").partition(": ")
        if v.startswith('"'):
            y[k] = json.loads(v)
    assert y["model_name"] == x["MODEL"] and y["model"] == "hosted_vllm/" + x["REPO"], y
    assert y["api_base"] == "http://%s:8000/v1" % x["H1"], y
else:
    assert opt(argv, "--worker-urls") == "http://%s:8000" % x["H1"], argv
PY
	run export -p "$TMP/evil.json" -c "$TMP/evil-cluster.json" --to launch --engine $e
	python3 - "$TMP/out" "$TMP/evil-expect.json" <<'PY' && ok || fail "hostile $e: JSON lines"
import json, sys
x = json.load(open(sys.argv[2]))
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [o["host"] for o in lines[:2]] == [x["H1"], x["H2"]], lines
assert x["REPO"] in lines[0]["argv"], lines[0]
PY
done

finish
