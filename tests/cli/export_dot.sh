#!/bin/sh
# export --to dot: a Graphviz picture of the plan (plan.dot), the same bytes
# every time (golden files), rendered by dot without a warning when dot is
# installed, safe with hostile names, written atomically.
# HX_UPDATE_GOLDEN=1 rewrites the golden files from the current output.
. "$(dirname "$0")/../lib.sh"

D=tests/data/export
G=$D/dot
HAVE_DOT=
if command -v dot >/dev/null 2>&1; then HAVE_DOT=1; else echo "dot not found: render checks skipped"; fi

# render FILE.dot WHAT: dot -Tsvg accepts FILE.dot, silently (FILE.svg kept).
render() {
	[ -n "$HAVE_DOT" ] || return 0
	if dot -Tsvg "$1" >"${1%.dot}.svg" 2>"$TMP/dot.err" && [ ! -s "$TMP/dot.err" ]; then
		ok
	else
		fail "$2: dot -Tsvg fails or warns"
		sed 's/^/  dot: /' "$TMP/dot.err" | head -5 >&2
	fi
}

# golden NAME WHAT: $TMP/out is $G/NAME.dot exactly.
golden() {
	if [ -n "${HX_UPDATE_GOLDEN:-}" ]; then cp "$TMP/out" "$G/$1.dot"; fi
	if cmp -s "$TMP/out" "$G/$1.dot"; then
		ok
	else
		fail "$2: differs from $G/$1.dot"
		diff "$G/$1.dot" "$TMP/out" | head -10 >&2
	fi
}

# Every fixture plan, plus one with a cluster file, plus one with every kind
# of edge (hops, cascade, TP across nodes, routes to things not in the plan).
for f in baseline pipeline disagg colocated features; do
	p=$D/$f.json
	[ "$f" = features ] && p=$G/features.json
	run export -p "$p" --to dot
	expect_rc 0 "$f: export"
	[ -s "$TMP/err" ] && fail "$f: stderr is not empty" || ok
	golden "$f" "$f"
	cp "$TMP/out" "$TMP/$f.dot"
	render "$TMP/$f.dot" "$f"
	run export -p "$p" --to dot
	cmp -s "$TMP/out" "$TMP/$f.dot" && ok || fail "$f: not deterministic"
done
run export -p $D/pipeline.json -c $D/pipeline-cluster.json --to dot
expect_rc 0 "pipeline with its cluster"
golden pipeline-cluster "pipeline with its cluster"
cp "$TMP/out" "$TMP/pc.dot"
render "$TMP/pc.dot" "pipeline with its cluster"

# What the picture holds: a cluster per node, a box per GPU used, an edge
# per replica, the routes with their shares.
python3 - "$TMP" <<'PY' && ok || fail "picture contents"
import json, re, sys
t = sys.argv[1]
for f in ["baseline", "disagg", "pipeline", "colocated"]:
    p = json.load(open("tests/data/export/%s.json" % f))
    dot = open("%s/%s.dot" % (t, f)).read()
    gpus = {x for g in p["groups"] for r in g["replicas"] for st in r["placement"] for x in st}
    nodes = {x.rsplit(":", 1)[0] for x in gpus}
    reps = [r for g in p["groups"] for r in g["replicas"]]
    assert len(re.findall(r'^\t\t\t?"gpu\d+" \[label="', dot, re.M)) == len(gpus), f
    for x in gpus:
        assert '[label="%s' % x in dot, (f, x)
    for n in nodes:
        assert re.search(r'label="%s \([^"]+\)"' % re.escape(n), dot), (f, n)
    assert len(re.findall(r'^\t"group\d+" -> "gpu\d+"|^\t"gpu\d+" -> "group\d+"', dot, re.M)) == len(reps), f
    for r in p["routing"]["ingress"]:
        assert '%.3g%%"' % (r["weight"] * 100) in dot, (f, r)
    kv = re.findall(r'^\t"gpu\d+" -> "gpu\d+" \[.*style=dashed.*label="([^"]*)"', dot, re.M)
    assert kv == ["%.3g%%" % (r["weight"] * 100) for r in p["routing"]["kv"]], (f, kv)
    stages = max(len(g["stages"]) for g in p["groups"])
    assert ("style=bold" in dot) == (stages > 1), f
    assert "cluster_legend" in dot, f
PY

# Hostile names: quotes, backslashes, braces, $(x), newlines, Graphviz
# escapes, markup and a colon everywhere a name goes; the picture has the
# same nodes and edges and shows the names as they are.
python3 - "$D/disagg.json" "$TMP/hostile.json" <<'PY' && ok || fail "hostile plan built"
import json, sys
p = json.load(open(sys.argv[1]))
bad = 'x"}\\{$(x)\n;\\N\\l<b>&amp;:\u00fc\\'
ren = {}
def name(old, n):
    ren.setdefault(old, (old + bad)[:n])
    return ren[old]
for g in p["groups"]:
    g["name"] = name(g["name"], 47)
    for r in g["replicas"]:
        r["id"] = name(r["id"], 47)
        r["placement"] = [[name(x.rsplit(":", 1)[0], 63) + ":" + x.rsplit(":", 1)[1]
                           for x in st] for st in r["placement"]]
for x in p["routing"]["ingress"]:
    x["group"] = ren[x["group"]]
    x["class"] = 'c"\\\n$(x)'
for x in p["routing"]["kv"]:
    x["from"], x["to"], x["link"] = ren[x["from"]], ren[x["to"]], x["link"] + bad
p["mode"] = "disagg"
json.dump(p, open(sys.argv[2], "w"))
PY
run export -p "$TMP/hostile.json" --to dot
expect_rc 0 "hostile names: export"
cp "$TMP/out" "$TMP/hostile.dot"
if grep -q '\$(x)' "$TMP/hostile.dot" && ! grep -q 'x"}' "$TMP/hostile.dot"; then ok; else fail "hostile names: not escaped"; fi
render "$TMP/hostile.dot" "hostile names"
if [ -n "$HAVE_DOT" ]; then
	python3 - "$TMP/hostile.svg" "$TMP/disagg.svg" <<'PY' && ok || fail "hostile names: picture"
import sys
h, d = open(sys.argv[1]).read(), open(sys.argv[2]).read()
for k in ['class="node"', 'class="edge"', 'class="cluster"']:
    assert h.count(k) == d.count(k) and h.count(k) > 0, (k, h.count(k), d.count(k))
# the names as written, one line per newline (XML-escaped by dot)
assert '&gt;p0x&quot;}\\{$(x)<' in h or '&quot;}\\{$(x)' in h
assert ';\\N\\l&lt;b&gt;&amp;amp;:\u00fc\\' in h
PY
fi

# -o FILE: the file, atomically (a new file renamed over the old: a hard
# link to the old one keeps the old bytes), nothing else left, nothing on
# stdout.
mkdir "$TMP/o"
echo old >"$TMP/o/plan.dot"
ln "$TMP/o/plan.dot" "$TMP/o/keep"
run export -p $D/baseline.json --to dot -o "$TMP/o/plan.dot"
expect_rc 0 "-o FILE"
[ -s "$TMP/out" ] && fail "-o FILE: stdout is not empty" || ok
cmp -s "$TMP/o/plan.dot" "$G/baseline.dot" && ok || fail "-o FILE: not the golden file"
[ "$(cat "$TMP/o/keep")" = old ] && ok || fail "-o FILE: written in place, not renamed over"
[ "$(ls -A "$TMP/o" | wc -l)" -eq 2 ] && ok || fail "-o FILE: files left behind: $(ls -A "$TMP/o")"
# -o DIR: DIR/plan.dot
run export -p $D/disagg.json --to dot -o "$TMP/o"
expect_rc 0 "-o DIR"
cmp -s "$TMP/o/plan.dot" "$G/disagg.dot" && ok || fail "-o DIR: DIR/plan.dot"
# -o into a missing directory: exit 1, one line, nothing made.
run export -p $D/baseline.json --to dot -o "$TMP/missing/plan.dot"
expect_rc 1 "-o into a missing directory"
expect_err_line '^hexplan: error: .*missing/plan\.dot' "-o into a missing directory: message"
[ -e "$TMP/missing" ] && fail "-o into a missing directory: something was made" || ok

# Options dot does not take (its flags in the export table lack them): a
# usage error naming the targets that do, exit 2, nothing written.
for o in --lossy --engine --format; do
	case $o in
	--lossy) args=--lossy what=--lossy list="launch, k8s, kserve, llm-d or dynamo" ;;
	--engine) args="--engine vllm" what=--engine list="launch, k8s or kserve" ;;
	--format) args="--format json" what="--format json|sh" list=launch ;;
	esac
	# shellcheck disable=SC2086
	run export -p $D/baseline.json --to dot $args -o "$TMP/refused.dot"
	expect_rc 2 "--to dot $args"
	[ "$(head -1 "$TMP/err")" = "hexplan: error: $what is for --to $list" ] && ok ||
		fail "--to dot $args: message"
	[ -e "$TMP/refused.dot" ] && fail "--to dot $args: something was written" || ok
done

finish
