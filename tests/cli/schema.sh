#!/bin/sh
# profiles/plan.schema.json says what the strict plan reader says: the
# plans hexplan makes (baseline and colocated) and the plans of
# tests/data/plans validate against it, and on variants of a plan (a key too
# many, one missing, a value out of range or of the wrong type) the schema
# and the reader ('hexplan plan -p') agree.
# Needs python3's jsonschema (Debian: python3-jsonschema); skipped without.
. "$(dirname "$0")/../lib.sh"

SCHEMA=profiles/plan.schema.json

if ! python3 -c 'from jsonschema import Draft202012Validator' 2>/dev/null; then
	echo "schema.sh: python3-jsonschema absent, skipped"
	exit 77
fi

# validate FILE...: one line per file, "ok FILE" or "bad FILE: why".
cat >"$TMP/validate.py" <<'PY'
import json, sys
from jsonschema import Draft202012Validator
schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
v = Draft202012Validator(schema)
for path in sys.argv[2:]:
    errs = sorted(v.iter_errors(json.load(open(path))), key=lambda e: list(e.absolute_path))
    if errs:
        e = errs[0]
        print("bad %s: /%s: %s" % (path, "/".join(map(str, e.absolute_path)), e.message[:200]))
    else:
        print("ok %s" % path)
PY
validate() {
	python3 "$TMP/validate.py" "$SCHEMA" "$@"
}
# verdict FILE LIST: the line of LIST about FILE.
verdict() {
	grep -Fx "ok $1" "$2" || grep -F "bad $1: " "$2" | head -n 1
}

# The schema is a valid draft 2020-12 schema.
: >"$TMP/err"
if python3 "$TMP/validate.py" "$SCHEMA" 2>"$TMP/err"; then ok; else fail "$SCHEMA is not a valid JSON Schema"; fi

# --- plans hexplan makes -----------------------------------------------------
mkdir "$TMP/made"
# MODE:CLUSTER:MODEL, one plan each.
for spec in baseline:mixed:llama-3.1-70b baseline:mixed:llama-3.1-405b \
	baseline:h100-node:llama-3.1-8b colocated:mixed:llama-3.1-70b colocated:three-regions:llama-3.1-70b; do
	mode=${spec%%:*}
	rest=${spec#*:}
	cluster=${rest%%:*}
	model=${rest#*:}
	name=$cluster-$model
	[ "$mode" = baseline ] || name=$mode-$name
	run plan -c "examples/clusters/$cluster.json" -w examples/workloads/chat.json -m "$model" \
		--mode "$mode" -o "$TMP/made/$name.json"
	expect_rc 0 "plan --mode $mode $cluster $model"
done
validate "$TMP/made"/*.json >"$TMP/made.txt" 2>"$TMP/err"
while IFS= read -r line; do
	case $line in ok\ *) ok ;; *) fail "a plan hexplan made: $line" ;; esac
done <"$TMP/made.txt"
[ "$(grep -c '^ok ' "$TMP/made.txt")" -eq 5 ] && ok || fail "validated $(grep -c '^ok ' "$TMP/made.txt") of 5 plans"

# --- tests/data/plans: the valid ones, and the broken ones the reader loads --
# The bad-*.json plans break rules of 'check' (GPUs, memory, routing), not the
# format: the reader loads them, so the schema accepts them too.
for f in tests/data/plans/*.json; do
	case ${f##*/} in
	bad-*) ;;
	*)
		run check -p "$f" -c examples/clusters/mixed.json
		expect_rc 0 "check accepts $f"
		;;
	esac
done
validate tests/data/plans/*.json >"$TMP/data.txt"
for f in tests/data/plans/*.json; do
	run plan -p "$f"
	line=$(verdict "$f" "$TMP/data.txt")
	: >"$TMP/err"
	if [ "$rc" -eq 0 ]; then
		case $line in ok\ *) ok ;; *) fail "the reader loads it, the schema rejects it: $line" ;; esac
	else
		case $line in bad\ *) ok ;; *) fail "the reader rejects $f (exit $rc), the schema accepts it" ;; esac
	fi
done

# --- the hand-written expert-parallel plans of tests/data/ep ------------------
validate tests/data/ep/*.json >"$TMP/ep.txt"
for f in tests/data/ep/*.json; do
	run plan -p "$f"
	expect_rc 0 "the reader loads $f"
	case $(verdict "$f" "$TMP/ep.txt") in ok\ *) ok ;; *) fail "EP plan: $(verdict "$f" "$TMP/ep.txt")" ;; esac
done
[ "$(grep -c '^ok ' "$TMP/ep.txt")" -ge 3 ] && ok || fail "validated $(grep -c '^ok ' "$TMP/ep.txt") EP plans"

# --- variants: the schema and the reader agree -------------------------------
# Each variant is a plan made above with one change; NAME says what it is.
mkdir "$TMP/var"
python3 - "$TMP/made/mixed-llama-3.1-70b.json" "$TMP/made/mixed-llama-3.1-405b.json" \
	"$TMP/var" <<'PY'
import copy, json, os, sys
base = json.load(open(sys.argv[1]))
pp = json.load(open(sys.argv[2]))
out = sys.argv[3]

def variant(name, f, plan=base):
    p = copy.deepcopy(plan)
    f(p)
    json.dump(p, open(os.path.join(out, name + ".json"), "w"), indent=1)

def setk(path, value):
    def f(p):
        x = p
        for k in path[:-1]:
            x = x[k]
        x[path[-1]] = value
    return f

def delk(path):
    def f(p):
        x = p
        for k in path[:-1]:
            x = x[k]
        del x[path[-1]]
    return f

def several(*fs):
    def f(p):
        for g in fs:
            g(p)
    return f

# Accepted by the reader (optional parts and their forms).
variant("ok-minimal", several(delk(["inputs"]), delk(["routing"]), delk(["predicted"]), delk(["solver"])))
variant("ok-no-group-options", several(delk(["groups", 0, "weights"]), delk(["groups", 0, "kv"]),
                                       delk(["groups", 0, "predicted"])))
variant("ok-tp-links", setk(["groups", 0, "replicas", 0, "tp_links"], [{"bw_gbps": 400, "latency_ms": 0.01}]))
variant("ok-tp-links-null", setk(["groups", 0, "replicas", 0, "tp_links"], [None]))
variant("ok-cross-node", setk(["groups", 0, "stages", 0, "cross_node"], True))
variant("ok-routes", setk(["routing"], {
    "ingress": [{"group": "g0", "weight": 0.5, "class": "short"}, {"group": "g1", "weight": 0.5}],
    "kv": [{"from": "g0r0", "to": "g1r0", "weight": 1, "link": "spine", "bw_gbps": 400, "latency_ms": 0.1}],
    "hops": [{"from": "g0r0/s0", "to": "g1r0/s0", "weight": 1, "link": "wan"}],
    "cascade": [{"model": "llama-3.1-70b", "threshold": 72, "escalate": 0.3}, {"model": "llama-3.1-70b", "escalate": 0}]}))
variant("ok-negative-weight", setk(["routing", "ingress", 0, "weight"], -0.5))
variant("ok-integers-as-numbers", several(setk(["predicted", "capacity_rps"], 3), setk(["solver", "gap"], 0)))
variant("ok-arch-minimal", setk(["models", 0, "arch"], {k: base["models"][0]["arch"][k] for k in
    ["layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab"]}))
variant("ok-other-mode", setk(["mode"], "colocated"))
variant("ok-solver-status", setk(["solver", "status"], "gap_limit"))
variant("ok-index-zeros", setk(["groups", 0, "replicas", 0, "placement", 0, 0], "h100-0:0000001"))
variant("ok-pp-links", lambda p: None, pp)
variant("ok-short", several(setk(["status"], "short"), setk(["shortfall"], {"rate_rps": 20, "utilization": 0.9, "shortfall_rps": 1.5, "served_share": 0.95})))
variant("ok-status-complete", setk(["status"], "complete"))
# The EP keys' bounds are the reader's; whether they fit the model is check's.
variant("ok-ep", several(setk(["groups", 0, "stages", 0, "ep"], 4), setk(["groups", 0, "stages", 0, "dp_attention"], 2),
                         setk(["groups", 0, "stages", 0, "redundant_experts"], 0), setk(["groups", 0, "stages", 0, "eplb_imbalance"], 1.1)))
variant("ok-ep-imbalance-integer", setk(["groups", 0, "stages", 0, "eplb_imbalance"], 2))

# Rejected by the reader.
variant("bad-top-key", setk(["comment"], "x"))
variant("bad-short-no-shortfall", setk(["status"], "short"))
variant("bad-shortfall-not-short", setk(["shortfall"], {"rate_rps": 20, "utilization": 0.9, "shortfall_rps": 1.5, "served_share": 0.95}))
variant("bad-status", setk(["status"], "partial"))
variant("bad-shortfall-share", several(setk(["status"], "short"), setk(["shortfall"], {"rate_rps": 20, "utilization": 0.9, "shortfall_rps": 1.5, "served_share": 0.95}),
                                       setk(["shortfall", "served_share"], 1.5)))
variant("bad-shortfall-missing", several(setk(["status"], "short"), setk(["shortfall"], {"rate_rps": 20, "utilization": 0.9, "shortfall_rps": 1.5, "served_share": 0.95}),
                                         delk(["shortfall", "utilization"])))
variant("bad-no-schema", delk(["schema"]))
variant("bad-schema-name", setk(["schema"], "hexplan.cluster"))
variant("bad-version", setk(["version"], 2))
variant("bad-no-mode", delk(["mode"]))
variant("bad-empty-mode", setk(["mode"], ""))
variant("bad-long-mode", setk(["mode"], "m" * 16))
variant("bad-inputs-key", setk(["inputs", "trace"], "sha256:0"))
variant("bad-no-models", delk(["models"]))
variant("bad-empty-models", setk(["models"], []))
variant("bad-model-key", setk(["models", 0, "params_b"], 70))
variant("bad-no-arch", delk(["models", 0, "arch"]))
variant("bad-arch-key", setk(["models", 0, "arch", "rope_theta"], 500000))
variant("bad-arch-no-layers", delk(["models", 0, "arch", "layers"]))
variant("bad-arch-zero-heads", setk(["models", 0, "arch", "heads"], 0))
variant("bad-arch-norm", setk(["models", 0, "arch", "norm"], "group"))
variant("bad-arch-bool", setk(["models", 0, "arch", "gated_mlp"], 1))
variant("bad-no-gpus", delk(["gpus"]))
variant("bad-gpu-base", setk(["gpus", 0, "base"], "h100-sxm"))
variant("bad-gpu-missing", delk(["gpus", 0, "e_attn"]))
variant("bad-gpu-efficiency", setk(["gpus", 0, "e_mem"], 1.5))
variant("bad-gpu-vendor", setk(["gpus", 0, "vendor"], "intel"))
variant("bad-gpu-string", setk(["gpus", 0, "mem_gib"], "80"))
variant("bad-no-groups", delk(["groups"]))
variant("bad-group-key", setk(["groups", 0, "engine"], "vllm"))
variant("bad-role", setk(["groups", 0, "role"], "mixed"))
variant("bad-no-role", delk(["groups", 0, "role"]))
variant("bad-weights-dtype", setk(["groups", 0, "weights"], "fp32"))
variant("bad-kv-dtype", setk(["groups", 0, "kv"], "int4"))
variant("bad-stage-key", setk(["groups", 0, "stages", 0, "pp"], 1))
variant("bad-tp-zero", setk(["groups", 0, "stages", 0, "tp"], 0))
variant("bad-tp-real", setk(["groups", 0, "stages", 0, "tp"], 2.5))
variant("bad-layers-one", setk(["groups", 0, "stages", 0, "layers"], [0]))
variant("bad-layers-three", setk(["groups", 0, "stages", 0, "layers"], [0, 40, 80]))
variant("bad-layers-negative", setk(["groups", 0, "stages", 0, "layers"], [-1, 80]))
variant("bad-layers-huge", setk(["groups", 0, "stages", 0, "layers"], [0, 2000000]))
variant("bad-cross-node", setk(["groups", 0, "stages", 0, "cross_node"], "yes"))
variant("bad-ep-zero", setk(["groups", 0, "stages", 0, "ep"], 0))
variant("bad-ep-huge", setk(["groups", 0, "stages", 0, "ep"], 4097))
variant("bad-ep-bool", setk(["groups", 0, "stages", 0, "ep"], True))
variant("bad-dp-attention-real", setk(["groups", 0, "stages", 0, "dp_attention"], 2.5))
variant("bad-dp-attention-bool", setk(["groups", 0, "stages", 0, "dp_attention"], True))
variant("bad-redundant-negative", setk(["groups", 0, "stages", 0, "redundant_experts"], -1))
variant("bad-imbalance-below-one", setk(["groups", 0, "stages", 0, "eplb_imbalance"], 0.9))
variant("bad-imbalance-string", setk(["groups", 0, "stages", 0, "eplb_imbalance"], "1.1"))
variant("bad-no-replicas", delk(["groups", 0, "replicas"]))
variant("bad-replica-key", setk(["groups", 0, "replicas", 0, "host"], "10.0.0.1"))
variant("bad-replica-no-id", delk(["groups", 0, "replicas", 0, "id"]))
variant("bad-placement-ref", setk(["groups", 0, "replicas", 0, "placement", 0, 0], "h100-0"))
variant("bad-placement-index", setk(["groups", 0, "replicas", 0, "placement", 0, 0], "h100-0:x"))
variant("bad-placement-empty", setk(["groups", 0, "replicas", 0, "placement", 0], []))
variant("bad-placement-number", setk(["groups", 0, "replicas", 0, "placement", 0, 0], 3))
variant("bad-tp-link", setk(["groups", 0, "replicas", 0, "tp_links"], [{"bw_gbps": 0}]))
variant("bad-group-predicted", setk(["groups", 0, "predicted", "ttft_ms"], 1))
variant("bad-routing-key", setk(["routing", "weights"], []))
variant("bad-ingress-key", setk(["routing", "ingress", 0, "to"], "g1"))
variant("bad-ingress-no-weight", delk(["routing", "ingress", 0, "weight"]))
variant("bad-ingress-weight", setk(["routing", "ingress", 0, "weight"], "0.5"))
variant("bad-kv-no-to", setk(["routing", "kv"], [{"from": "g0r0", "weight": 1}]))
variant("bad-kv-bw", setk(["routing", "kv"], [{"from": "g0r0", "to": "g1r0", "weight": 1, "bw_gbps": -1}]))
variant("bad-cascade-escalate", setk(["routing", "cascade"], [{"model": "llama-3.1-70b", "escalate": 1.5}]))
variant("bad-cascade-no-escalate", setk(["routing", "cascade"], [{"model": "llama-3.1-70b", "threshold": 50}]))
variant("bad-predicted-key", setk(["predicted", "goodput_rps"], 1))
variant("bad-predicted-negative", setk(["predicted", "usd_per_hour"], -1))
variant("bad-status", setk(["solver", "status"], "done"))
variant("bad-work-key", setk(["solver", "work", "seconds"], 1))
variant("bad-seed", setk(["solver", "seed"], -1))
variant("bad-pp-no-links", delk(["groups", 0, "replicas", 0, "links"]), pp)
variant("bad-pp-link", setk(["groups", 0, "replicas", 0, "links", 0], {"latency_ms": 1}), pp)
PY
validate "$TMP/var"/*.json >"$TMP/var.txt"
nvar=0
for f in "$TMP/var"/*.json; do
	nvar=$((nvar + 1))
	name=${f##*/}
	run plan -p "$f"
	line=$(verdict "$f" "$TMP/var.txt")
	case $name:$rc:$line in
	ok-*:0:ok\ * | bad-*:1:bad\ *)
		ok ;;
	ok-*)
		fail "variant $name: the reader gives exit $rc, the schema: $line" ;;
	*:1:*)
		: >"$TMP/err"
		fail "variant $name: the reader rejects it, the schema accepts it" ;;
	*)
		fail "variant $name: the reader gives exit $rc (expected 1), the schema: $line" ;;
	esac
done
[ "$nvar" -ge 60 ] && ok || fail "only $nvar variants written"

finish
