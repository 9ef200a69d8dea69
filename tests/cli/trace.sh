#!/bin/sh
# trace: determinism, rates, shapes, resampling, output files, errors.
. "$(dirname "$0")/../lib.sh"

HEADER=arrival_s,input_tokens,output_tokens

# rows FILE: the number of requests (lines after the header).  (lib.sh's
# helpers use $n, so counts kept across them go in $count.)
rows() {
	echo $(($(wc -l <"$1") - 1))
}

# expect_usage DESCRIPTION: exit 2, an error line, then the usage.
expect_usage() {
	expect_rc 2 "$1"
	if head -n 1 "$TMP/err" | grep -q '^hexplan: error: ' &&
		sed -n 2p "$TMP/err" | grep -q '^usage: hexplan trace '; then
		ok
	else
		fail "$1: stderr is not an error and the usage"
	fi
	[ -s "$TMP/out" ] && fail "$1: output despite the error" || ok
}

# --- from a workload ---------------------------------------------------------
run trace -w examples/workloads/chat.json --duration 60 --seed 3
expect_rc 0 "trace from a workload"
[ -s "$TMP/err" ] && fail "stderr when writing to stdout" || ok
cp "$TMP/out" "$TMP/first"
run trace -w examples/workloads/chat.json --duration 60 --seed 3
cmp -s "$TMP/out" "$TMP/first" && ok || fail "same seed, different traces"
[ "$(head -n 1 "$TMP/out")" = "$HEADER" ] && ok || fail "header line"
n=$(rows "$TMP/out")
approx "$n" 1200 0.25 && ok || fail "$n requests in 60 s at 20 req/s"
# Every row: an arrival with 6 decimals, in order, within the duration,
# and two positive integers.
awk -F, 'NR > 1 && !($1 ~ /^[0-9]+\.[0-9][0-9][0-9][0-9][0-9][0-9]$/ && $2 ~ /^[1-9][0-9]*$/ &&
	$3 ~ /^[1-9][0-9]*$/ && $1 + 0 >= prev && $1 + 0 <= 60) { bad = 1 }
	NR > 1 { prev = $1 + 0 } END { exit bad }' "$TMP/out" && ok || fail "malformed rows"
run trace -w examples/workloads/chat.json --duration 60 --seed 4
cmp -s "$TMP/out" "$TMP/first" && fail "seeds 3 and 4 give the same trace" || ok
# The default seed is 1.
run trace -w examples/workloads/chat.json --duration 10
cp "$TMP/out" "$TMP/seed1"
run trace -w examples/workloads/chat.json --duration 10 --seed 1
cmp -s "$TMP/out" "$TMP/seed1" && ok || fail "the default seed is not 1"

# --rate overrides the workload's rate; classes and gamma arrivals work.
run trace -w examples/workloads/chat.json --rate 5 --duration 100
expect_rc 0 "-w with --rate"
n=$(rows "$TMP/out")
approx "$n" 500 0.25 && ok || fail "$n requests in 100 s at --rate 5"
run trace -w examples/workloads/classes.json --duration 20
expect_rc 0 "workload with classes"
approx "$(rows "$TMP/out")" 600 0.25 && ok || fail "classes: $(rows "$TMP/out") requests"
run trace -w examples/workloads/code.json --duration 100
expect_rc 0 "gamma arrivals"
approx "$(rows "$TMP/out")" 1000 0.35 && ok || fail "gamma: $(rows "$TMP/out") requests"

# --- built-in shapes, written to a file ---------------------------------------
run trace --shape code --rate 2 --duration 100 -o "$TMP/code.csv"
expect_rc 0 "--shape code -o FILE"
[ -s "$TMP/out" ] && fail "stdout with -o FILE" || ok
count=$(rows "$TMP/code.csv")
expect_err_line "^hexplan: wrote $count requests over 100 s \([0-9.]+ req/s\)$" "summary line"
run validate -t "$TMP/code.csv"
expect_rc 0 "validate accepts the written trace"
approx "$(jnum trace.requests)" "$count" 0 && ok || fail "validate counts $(jnum trace.requests), not $count"
run trace --shape conversation --rate 2 --duration 10 --seed 1 -o -
expect_rc 0 "--shape conversation -o -"
[ -s "$TMP/err" ] && fail "summary with -o -" || ok
[ "$(head -n 1 "$TMP/out")" = "$HEADER" ] && ok || fail "conversation header"

# --- resampling a trace --------------------------------------------------------
printf '%s\n0,100,7\n1.5,2000,1\n2.25,100,300\n' "$HEADER" >"$TMP/sample.csv"
run trace --shape "$TMP/sample.csv" --rate 10 --duration 100 --seed 9
expect_rc 0 "--shape FILE"
sed 1d "$TMP/out" | cut -d, -f2,3 | sort -u >"$TMP/pairs"
printf '100,300\n100,7\n2000,1\n' >"$TMP/want_pairs"
cmp -s "$TMP/pairs" "$TMP/want_pairs" && ok || fail "resampled pairs: $(tr '\n' ' ' <"$TMP/pairs")"
# The Azure format resamples too.
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n' >"$TMP/azure.csv"
run trace --shape "$TMP/azure.csv" --rate 1 --duration 50
expect_rc 0 "--shape FILE in the Azure format"
[ "$(sed 1d "$TMP/out" | cut -d, -f2,3 | sort -u)" = "374,44" ] && ok || fail "azure pairs"

# The public trace, when present: its lengths come back.
AZURE=../shared/data/traces/AzureLLMInferenceTrace_conv.csv
if [ -f "$AZURE" ]; then
	run trace --shape "$AZURE" --rate 5 --duration 600 -o "$TMP/conv.csv"
	expect_rc 0 "--shape the Azure conversation trace"
	run validate -t "$TMP/conv.csv"
	expect_rc 0 "validate the resampled Azure trace"
	approx "$(jnum trace.mean_input_tokens)" 1155 0.15 && ok ||
		fail "mean input $(jnum trace.mean_input_tokens), expected about 1155"
	approx "$(jnum trace.rate_rps)" 5 0.1 && ok || fail "rate $(jnum trace.rate_rps)"
fi

# --- usage errors ----------------------------------------------------------------
run trace --duration 10
expect_usage "neither -w nor --shape"
run trace -w examples/workloads/chat.json --shape code --rate 1 --duration 10
expect_usage "both -w and --shape"
grep -q 'not both' "$TMP/err" && ok || fail "both: message"
run trace --shape code --duration 10
expect_usage "--shape without --rate"
grep -q -- '--shape needs --rate' "$TMP/err" && ok || fail "--rate: message"
run trace -w examples/workloads/chat.json
expect_usage "missing --duration"
grep -q -- '--duration is required' "$TMP/err" && ok || fail "--duration: message"
run trace --shape code --rate fast --duration 10
expect_usage "bad --rate"
grep -q -- '--rate must be a number' "$TMP/err" && ok || fail "--rate number: message"
run trace --shape code --rate 0 --duration 10
expect_usage "zero --rate"
run trace --shape code --rate 1 --duration -5
expect_usage "negative --duration"
run trace --shape code --rate 1 --duration 10 --seed x
expect_usage "bad --seed"
grep -q -- '--seed must be an integer' "$TMP/err" && ok || fail "--seed: message"
run trace --shape code --rate 1 --duration 10 extra
expect_usage "extra argument"
run trace --shape code --rate 1 --duration 10 --bogus
expect_usage "unknown option"

# --- input errors ----------------------------------------------------------------
printf '{"version": 1, "rate_rps": -3}\n' >"$TMP/bad.json"
run trace -w "$TMP/bad.json" --duration 10
expect_rc 1 "bad workload"
expect_err_line "^hexplan: error: .*bad\.json: /rate_rps: " "bad workload message"
[ -s "$TMP/out" ] && fail "output despite a bad workload" || ok
run trace -w "$TMP/nosuch.json" --duration 10
expect_rc 1 "missing workload"
expect_err_line '^hexplan: error: .*nosuch\.json' "missing workload message"
printf 'a,b,c\n1,2,3\n' >"$TMP/badtrace.csv"
run trace --shape "$TMP/badtrace.csv" --rate 1 --duration 10
expect_rc 1 "bad --shape FILE"
expect_err_line '^hexplan: error: .*badtrace\.csv:1: unknown trace header' "bad trace message"
run trace --shape "$TMP/nosuch.csv" --rate 1 --duration 10
expect_rc 1 "missing --shape FILE"
run trace --shape code --rate 0.001 --duration 1
expect_rc 1 "no request in the duration"
expect_err_line '^hexplan: error: no request arrives within 1 s at 0\.001 req/s' "empty trace message"
run trace --shape code --rate 1000000 --duration 100000000
expect_rc 1 "too many requests"
expect_err_line 'more than the limit of' "too many requests message"

# -o into a missing directory: exit 1, nothing left behind.
mkdir "$TMP/outdir"
run trace --shape code --rate 1 --duration 10 -o "$TMP/outdir/missing/t.csv"
expect_rc 1 "-o into a missing directory"
expect_err_line '^hexplan: error: ' "-o missing directory message"
[ -e "$TMP/outdir/missing" ] && fail "-o created the missing directory" || ok
[ -z "$(ls -A "$TMP/outdir")" ] && ok || fail "-o left files behind: $(ls -A "$TMP/outdir")"

finish
