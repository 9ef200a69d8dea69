#!/bin/sh
# limits.sh: inputs that are well formed but enormous are refused with a
# clear message naming the limit (hexplan-formats(5), LIMITS), before they
# cost memory or time.  The big files are made here, not stored: sparse
# files for the byte limits, generated JSON for the count limits.
. "$(dirname "$0")/../lib.sh"

# gen_cluster NODES GPUS_PER_NODE LINKS: a cluster file on stdout
gen_cluster() {
	python3 - "$@" <<'PY'
import json, sys
n, g, l = map(int, sys.argv[1:])
nodes = [{"name": "n%d" % i, "gpu": "l4", "count": g} for i in range(n)]
links = [{"a": "n%d" % (i % n), "b": "n%d" % ((i + 1 + i // n) % n), "bw_gbps": 10}
         for i in range(l)]
print(json.dumps({"version": 1, "nodes": nodes, "links": links}))
PY
}

gen_cluster 4097 1 0 >"$TMP/c1.json"
run validate -c "$TMP/c1.json"
expect_rc 1 "4097 nodes"
expect_err_line "^hexplan: error: $TMP/c1.json: /nodes: 4097 nodes are more than hexplan's limit of 4096\$" "4097 nodes message"

gen_cluster 4096 17 0 >"$TMP/c2.json"
run validate -c "$TMP/c2.json"
expect_rc 1 "69632 GPUs"
expect_err_line "^hexplan: error: $TMP/c2.json: /nodes: 69632 GPUs are more than hexplan's limit of 65536 per cluster\$" "GPU limit message"

gen_cluster 4096 16 0 >"$TMP/c3.json"
run validate -c "$TMP/c3.json"
expect_rc 0 "65536 GPUs on 4096 nodes are accepted"

gen_cluster 200 1 16385 >"$TMP/c4.json"
run validate -c "$TMP/c4.json"
expect_rc 1 "16385 links"
expect_err_line "^hexplan: error: $TMP/c4.json: /links: 16385 links are more than hexplan's limit of 16384\$" "link limit message"

cat >"$TMP/c5.json" <<'J'
{"version": 1, "offers": [{"gpu": "h100-sxm", "max_count": 1000000000, "usd_per_hour": 2.5, "gpus_per_node": 8}]}
J
run validate -c "$TMP/c5.json"
expect_rc 1 "10^9 GPUs offered"
expect_err_line "^hexplan: error: $TMP/c5.json: /offers/0/max_count: must be between 0 and 65536, not 1000000000$" "offer limit message"

python3 -c 'import json; print(json.dumps({"version": 1, "rate_rps": 1,
  "prompt_tokens": {"buckets": [[i + 1, 1] for i in range(100001)]},
  "output_tokens": {"dist": "lognormal", "mean": 200, "p50": 150},
  "slo": {"ttft_ms": 1000, "tpot_ms": 100}}))' >"$TMP/w1.json"
run validate -w "$TMP/w1.json"
expect_rc 1 "100001 buckets"
expect_err_line "^hexplan: error: $TMP/w1.json: /prompt_tokens/buckets: 100001 buckets are more than hexplan's limit of 100000\$" "bucket limit message"

python3 -c 'import json; w = json.load(open("examples/workloads/cascade.json"))
w["quality"]["samples"] = w["quality"]["samples"] * 251
print(json.dumps(w))' >"$TMP/w2.json"
run validate -w "$TMP/w2.json"
expect_rc 1 "100400 quality samples"
expect_err_line "^hexplan: error: $TMP/w2.json: /quality/samples: 100400 samples are more than hexplan's limit of 100000\$" "quality sample limit message"

# byte limits: sparse files cost no disk
truncate -s 65M "$TMP/big.json"
run validate -c "$TMP/big.json"
expect_rc 1 "65 MiB cluster file"
expect_err_line "^hexplan: error: $TMP/big.json: the file is larger than hexplan's limit of 64 MiB for this input\$" "JSON byte limit message"
run plan -p "$TMP/big.json"
expect_rc 1 "65 MiB plan file"
truncate -s 1025M "$TMP/big.csv"
run validate -t "$TMP/big.csv"
expect_rc 1 "1025 MiB trace"
expect_err_line "^hexplan: error: $TMP/big.csv: the file is larger than hexplan's limit of 1 GiB for this input\$" "trace byte limit message"
# Not a regular file: read only up to the limit, then refused.
run validate -c /dev/zero
expect_rc 1 "cluster from /dev/zero"
expect_err_line "^hexplan: error: /dev/zero: the input is larger than hexplan's limit of 64 MiB\$" "/dev/zero message"
head -c 70000000 /dev/zero | hx validate -c - >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_rc 1 "cluster from a pipe"
expect_err_line "^hexplan: error: <stdin>: the input is larger than hexplan's limit of 64 MiB\$" "pipe message"
finish
