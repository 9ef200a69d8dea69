#!/bin/sh
# plan --mode baseline: a full plan that check accepts, deterministic,
# atomic output, readable table, clear errors.
. "$(dirname "$0")/../lib.sh"

run plan -c examples/clusters/mixed.json -w examples/workloads/chat.json -m llama-3.1-70b -o "$TMP/p.json"
expect_rc 0 "baseline plan"
[ -s "$TMP/out" ] && fail "plan -o printed on stdout" || ok
run check -p "$TMP/p.json" -c examples/clusters/mixed.json
expect_rc 0 "check accepts the baseline plan"
# Written atomically, yet with the mode a plain create would give.
want=$(printf '%o' $((0666 & ~$(umask))))
[ "$(stat -c %a "$TMP/p.json")" = "$want" ] && ok || fail "plan file mode $(stat -c %a "$TMP/p.json"), expected $want"
expect_out '"valid": true' "check says valid"

run plan -c examples/clusters/mixed.json -w examples/workloads/chat.json -m llama-3.1-70b
expect_rc 0 "plan to stdout"
cmp -s "$TMP/out" "$TMP/p.json" && ok || fail "stdout and -o differ, or the plan is not deterministic"
[ "$(jnum schema)" = "hexplan.plan" ] && ok || fail "schema"
[ "$(jnum mode)" = "baseline" ] && ok || fail "mode"
[ "$(jnum solver.status)" = "heuristic" ] && ok || fail "solver status"
case "$(jnum inputs.cluster)" in sha256:*) ok ;; *) fail "cluster digest" ;; esac
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["predicted"]["capacity_rps"]; sys.exit(0 if 10 < c < 100 else 1)' "$TMP/out" && ok || fail "capacity figure"

# The plan stands alone: print it back, as JSON and as a table.
run plan -p "$TMP/p.json"
expect_rc 0 "plan -p"
cmp -s "$TMP/out" "$TMP/p.json" && ok || fail "plan -p does not give the same bytes"
run plan -p "$TMP/p.json" --format table
expect_rc 0 "plan -p table"
expect_out '^plan baseline: 3 groups, 28 replicas on 64 GPUs' "table header"
expect_out '^g2 +aggregated +llama-3.1-70b +l40s x4 \[0,80\)' "table row"

# The workload names the model when -m is absent.
run plan -c examples/clusters/h100-node.json -w examples/workloads/chat.json --format table
expect_rc 0 "model from the workload"
expect_out 'model llama-3.1-8b' "workload's model"

# A model too big for a node: fewest nodes of one type, with PP.
run plan -c examples/clusters/mixed.json -w examples/workloads/chat.json -m llama-3.1-405b -o "$TMP/p405.json"
expect_rc 0 "405b baseline"
run check -p "$TMP/p405.json" -c examples/clusters/mixed.json
expect_rc 0 "check accepts the PP plan"

# Fits nowhere: exit 3, what binds, no file.
run plan -c examples/clusters/h100-node.json -w examples/workloads/chat.json -m deepseek-v3 -o "$TMP/none.json"
expect_rc 3 "deepseek-v3 on one node"
expect_err_line '^hexplan: error: deepseek-v3 fits on no node nor on any set of nodes of one GPU type: its weights alone are [0-9.]+ GiB' "fits nowhere message"
[ -e "$TMP/none.json" ] && fail "a failed plan left a file" || ok

# A failed run leaves the old file as it was.
cp "$TMP/p.json" "$TMP/keep.json"
run plan -c examples/clusters/h100-node.json -w examples/workloads/chat.json -m deepseek-v3 -o "$TMP/keep.json"
cmp -s "$TMP/keep.json" "$TMP/p.json" && ok || fail "a failed plan touched the old file"

run plan -c examples/clusters/mixed.json -w examples/workloads/chat.json --mode bogus
expect_rc 2 "unknown mode"
run plan -c examples/clusters/mixed.json
expect_rc 2 "no workload"
run plan -p "$TMP/p.json" -c examples/clusters/mixed.json
expect_rc 2 "-p with -c"
run plan -p tests/data/bad/cluster-truncated.json
expect_rc 1 "plan -p on a bad file"

# --mode auto: every fixed-GPU mode planned and judged in the simulator;
# the written plan is the one that simulates best, and says so.
cat >"$TMP/two-l40s.json" <<'EOF2'
{"version": 1, "nodes": [{"name": "a", "gpu": "l40s", "count": 2}, {"name": "b", "gpu": "l40s", "count": 2}]}
EOF2
run plan --mode auto -c "$TMP/two-l40s.json" -m llama-3.1-8b -w examples/workloads/chat.json -o "$TMP/auto.json"
expect_rc 0 "plan --mode auto"
cp "$TMP/err" "$TMP/auto.err"
python3 - "$TMP/auto.err" "$TMP/auto.json" <<'PY' && ok || fail "auto: candidates table and the chosen plan"
import json, sys
lines = [l.split() for l in open(sys.argv[1]) if l.startswith("hexplan: plan: auto: ")]
rows = {l[3]: l for l in lines[1:]}
assert set(rows) == {"baseline", "colocated", "disagg", "afd", "pipeline"}, rows
sim = {m: float(l[5]) for m, l in rows.items() if l[4] != "no"}
chosen = [m for m, l in rows.items() if l[-1] == "chosen"]
assert len(chosen) == 1, chosen
assert all(sim[chosen[0]] >= v for v in sim.values()), (chosen, sim)
p = json.load(open(sys.argv[2]))
assert p["mode"] == chosen[0], (p["mode"], chosen)
print(sim[chosen[0]], file=open(sys.argv[1] + ".sim", "w"))
PY
run check -p "$TMP/auto.json" -c "$TMP/two-l40s.json"
expect_rc 0 "check accepts the auto plan"
run simulate -p "$TMP/auto.json" -w examples/workloads/chat.json --capacity --seed 1
approx "$(jnum capacity_rps)" "$(cat "$TMP/auto.err.sim")" 0.001 && ok || fail "auto's simulated capacity is simulate --capacity's"
run plan --mode auto -c "$TMP/two-l40s.json" -m llama-3.1-8b -w examples/workloads/chat.json -o "$TMP/auto2.json"
cmp -s "$TMP/auto.json" "$TMP/auto2.json" && ok || fail "plan --mode auto is not deterministic"
run plan --mode auto -c "$TMP/two-l40s.json" -m llama-3.1-8b -w examples/workloads/chat.json --objective latency
expect_rc 1 "auto with --objective latency"
expect_err_line '^hexplan: error: --mode auto judges plans by capacity or cost, not latency$' "auto latency message"

finish
