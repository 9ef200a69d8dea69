#!/bin/sh
# check: valid plans pass; every broken plan of tests/data/plans reports
# exactly its violations, one line each; bad input and misuse.
. "$(dirname "$0")/../lib.sh"

MIXED=examples/clusters/mixed.json
PLANS=tests/data/plans

run check -p $PLANS/mixed-baseline.json -c $MIXED
expect_rc 0 "valid baseline plan"
[ -s "$TMP/err" ] && fail "valid plan: stderr not empty" || ok
[ "$(jnum valid)" = "True" ] && ok || fail "valid is not true"
[ "$(jnum groups)/$(jnum replicas)/$(jnum gpus_used)/$(jnum gpus_total)" = "3/5/24/64" ] && ok ||
	fail "baseline counts $(jnum groups)/$(jnum replicas)/$(jnum gpus_used)/$(jnum gpus_total)"

run check -p $PLANS/mixed-disagg.json -c $MIXED --format table
expect_rc 0 "valid disaggregated plan"
[ "$(cat "$TMP/out")" = "ok: 2 groups, 4 replicas, 4 of 64 GPUs" ] && ok || fail "table line: $(cat "$TMP/out")"

# A stored v1 plan without an optional GPU key (a100-80g's tflops_fp8, whose
# fixed default 0 is its stored value) checks exactly as the full plan does.
cp "$TMP/out" "$TMP/full_table"
python3 - $PLANS/mixed-disagg.json "$TMP/no-fp8.json" <<'PY' && ok || fail "strip tflops_fp8"
import json, sys
p = json.load(open(sys.argv[1]))
gs = [g for g in p["gpus"] if g["tflops_fp8"] == 0]
assert gs
for g in gs:
    del g["tflops_fp8"]
json.dump(p, open(sys.argv[2], "w"))
PY
run check -p "$TMP/no-fp8.json" -c $MIXED --format table
expect_rc 0 "plan without tflops_fp8"
cmp -s "$TMP/out" "$TMP/full_table" && ok || fail "plan without tflops_fp8: $(cat "$TMP/out")"
# and it is the same plan: read and written again, the full plan's bytes.
run plan -p "$TMP/no-fp8.json" --format json
expect_rc 0 "plan -p without tflops_fp8"
cmp -s "$TMP/out" $PLANS/mixed-disagg.json && ok || fail "plan without tflops_fp8 reads back differently"

# FILE|POINTER: MESSAGE, in the order check prints them.
cat >"$TMP/expected" <<'EOF'
bad-unknown-gpu.json|/groups/0/replicas/1/placement/0/3: GPU "h100-0:8": node "h100-0" has 8 GPUs
bad-unknown-node.json|/groups/1/replicas/1/placement/0/0: GPU "a100-9:1": the cluster has no node "a100-9"
bad-gpu-twice.json|/groups/0/replicas/1/placement/0/0: GPU "h100-0:3" is already used at /groups/0/replicas/0/placement/0/3
bad-gpu-type.json|/groups/1/replicas/1/placement/0/0: node "l40s-2" has l40s GPUs, not the stage's a100-80g
bad-tp-count.json|/groups/0/replicas/1/placement/0: has 3 GPUs, the stage's tp is 4
bad-layers.json|/groups/2/stages/1/layers: starts at layer 41, not 40 where the previous stage ends
bad-tp-heads.json|/groups/0/stages/0/tp: tp 3 does not divide the 64 attention heads of llama-3.1-70b
bad-memory.json|/groups/3/replicas/0/placement/0: does not fit on the l40s GPUs of node "l40s-2": weights 65.71 GiB + reserve 2.00 GiB + KV of 4096 tokens 0.62 GiB exceed 40.50 GiB (90% of 45 GiB); short by 27.83 GiB
bad-cross-node.json|/groups/1/replicas/1/placement/0: the TP group spans nodes "a100-0" and "a100-1" but the stage is not cross_node
bad-undeclared-gpu.json|/groups/2/stages/0/gpu: GPU "l40s" is not among the plan's gpus
bad-undeclared-gpu.json|/groups/2/stages/1/gpu: GPU "l40s" is not among the plan's gpus
bad-undeclared-model.json|/groups/1/model: model "llama-3.1-8b" is not among the plan's models
bad-route-negative.json|/routing/ingress/2/weight: is negative (-0.25)
bad-route-sum.json|/routing/ingress: the weights for all traffic sum to 0.9, not 1
bad-route-class-sum.json|/routing/ingress: the weights of class "short" sum to 0.9, not 1
bad-route-group.json|/routing/ingress/2/group: no group "g9"
bad-route-empty.json|/routing/ingress: no route: no traffic reaches the plan's groups
bad-kv-sum.json|/routing/kv: the weights from "g0r0" sum to 0.9, not 1
bad-kv-replica.json|/routing/kv/1/to: no replica "g1r7"
bad-hops-replica.json|/routing/hops/0/to: no replica "g2r9"
bad-hops-sum.json|/routing/hops: the weights from "g2r0/s0" sum to 0.5, not 1
bad-cascade-model.json|/routing/cascade/0/model: model "llama-3.1-8b" is not among the plan's models
bad-role-no-kv.json|/groups/0/replicas/1/id: prefill replica "g0r1" has no kv route to a decode replica
bad-role-kv-from.json|/routing/kv/4/from: replica "g1r0" is decode, not prefill
bad-role-kv-to.json|/routing/kv/3/to: replica "g0r0" is prefill, not decode
bad-duplicate-replica.json|/groups/1/replicas/1/id: duplicate replica id "g1r0" (first at /groups/1/replicas/0)
bad-two-defects.json|/groups/0/replicas/1/placement/0/0: GPU "h100-0:3" is already used at /groups/0/replicas/0/placement/0/3
bad-two-defects.json|/routing/ingress: the weights for all traffic sum to 0.9, not 1
bad-short.json|/shortfall/shortfall_rps: 80, but the rate needs 111.111 req/s and the plan carries 25.7346: 85.3765 short
EOF

for f in $(cut -d'|' -f1 "$TMP/expected" | uniq); do
	grep "^$f|" "$TMP/expected" | cut -d'|' -f2- |
		sed "s#^#hexplan: error: $PLANS/$f: #" >"$TMP/want"
	run check -p "$PLANS/$f" -c $MIXED
	expect_rc 1 "$f"
	if cmp -s "$TMP/err" "$TMP/want"; then ok; else
		fail "$f: stderr differs"
		diff "$TMP/want" "$TMP/err" | sed 's/^/  /' >&2
	fi
	[ -s "$TMP/out" ] && fail "$f: output on stdout" || ok
done

# Every broken plan is listed above.
for f in "$PLANS"/bad-*.json; do
	grep -q "^$(basename "$f")|" "$TMP/expected" && ok || fail "$f has no expected lines"
done

# The plan read from stdin is named <stdin>.
run check -p - -c $MIXED <$PLANS/bad-route-sum.json
expect_rc 1 "plan on stdin"
expect_err_line '^hexplan: error: <stdin>: /routing/ingress: the weights for all traffic sum to 0\.9, not 1$' "stdin name"

# A plan for the mixed cluster checked against a one-node cluster: all 24 of
# its GPUs are unknown.
run check -p $PLANS/mixed-baseline.json -c examples/clusters/h100-node.json
expect_rc 1 "wrong cluster"
[ "$(wc -l <"$TMP/err")" -eq 24 ] && ok || fail "wrong cluster: $(wc -l <"$TMP/err") lines, expected 24"
[ "$(grep -Ec '^hexplan: error: tests/data/plans/mixed-baseline\.json: /groups/[0-9]+/replicas/[0-9]+/placement/[0-9]+/[0-9]+: GPU "[a-z0-9-]+:[0-9]+": the cluster has no node "[a-z0-9-]+"$' "$TMP/err")" -eq 24 ] &&
	ok || fail "wrong cluster: unexpected lines"
grep -qx 'hexplan: error: tests/data/plans/mixed-baseline.json: /groups/2/replicas/0/placement/1/3: GPU "l40s-1:3": the cluster has no node "l40s-1"' "$TMP/err" &&
	ok || fail "wrong cluster: l40s-1:3 line"

# Bad input: the loaders' one-line messages.
run check -p $PLANS/nosuch.json -c $MIXED
expect_rc 1 "missing plan file"
expect_err_line "^hexplan: error: $PLANS/nosuch\\.json: No such file or directory\$" "missing plan message"
[ -s "$TMP/out" ] && fail "missing plan: output on stdout" || ok

printf '{"schema": "hexplan.plan",\n "version": 1,,}\n' >"$TMP/syntax.json"
run check -p "$TMP/syntax.json" -c $MIXED
expect_rc 1 "plan syntax error"
expect_err_line "^hexplan: error: $TMP/syntax\\.json:2:15: " "syntax error message"

printf '{"schema": "hexplan.plan", "version": 1, "mode": "baseline", "models": []}\n' >"$TMP/empty.json"
run check -p "$TMP/empty.json" -c $MIXED
expect_rc 1 "plan without models"
expect_err_line "^hexplan: error: $TMP/empty\\.json: /models: " "plan loader pointer"

run check -p $PLANS/mixed-baseline.json -c nosuch-cluster.json
expect_rc 1 "missing cluster file"
expect_err_line '^hexplan: error: nosuch-cluster\.json: No such file or directory$' "missing cluster message"

# Misuse.
run check -p $PLANS/mixed-baseline.json
expect_rc 2 "missing -c"
[ -s "$TMP/out" ] && fail "missing -c: output on stdout" || ok
grep -q '^hexplan: error: missing -c cluster.json$' "$TMP/err" && ok || fail "missing -c message"
run check -c $MIXED
expect_rc 2 "missing -p"
run check -p $PLANS/mixed-baseline.json -c $MIXED --format xml
expect_rc 2 "bad --format"
run check -p $PLANS/mixed-baseline.json -c $MIXED extra
expect_rc 2 "extra argument"

finish
