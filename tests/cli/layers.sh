#!/bin/sh
# The layers of src/ (README "Repository layout") and what each may include:
#   base      base
#   solver    solver, base/util.h
#   model     base, solver, model
#   plan      base, model, plan
#   sim       base, model, plan, sim
#   export    base, model, plan, export
#   planners  base, model, plan, sim, solver, planners/common.h,
#             planners/candidates.h and the file's own mode header
#             (planners/X.h for X.c and X_*.c)
#   cli       anything
# A module's private header (FOLDER/X_int.h) is for its own files alone
# (FOLDER/X.c, FOLDER/X_*.c), whatever their layer may otherwise include.
# Also: no include cycle between modules (a module is a header's stem and
# the .c files of that stem), and no function longer than 150 lines.
. "$(dirname "$0")/../lib.sh"

# allowed FOLDER FILE HEADER: 0 when FILE of FOLDER may include HEADER.
allowed() {
	folder=$1 file=$2 h=$3
	hdir=${h%%/*}
	stem=$(basename "$file")
	stem=${stem%.[ch]}
	own=${stem%%_*}
	case $h in
	*_int.h)
		[ "$h" = "$folder/${own}_int.h" ]
		return
		;;
	esac
	case $folder in
	base) [ "$hdir" = base ] ;;
	solver) [ "$hdir" = solver ] || [ "$h" = base/util.h ] ;;
	model) case $hdir in base | solver | model) true ;; *) false ;; esac ;;
	plan) case $hdir in base | model | plan) true ;; *) false ;; esac ;;
	sim) case $hdir in base | model | plan | sim) true ;; *) false ;; esac ;;
	export) case $hdir in base | model | plan | export) true ;; *) false ;; esac ;;
	planners)
		case $hdir in
		base | model | plan | sim | solver) return 0 ;;
		planners) ;;
		*) return 1 ;;
		esac
		case $h in
		planners/common.h | planners/candidates.h | "planners/$own.h") true ;;
		*) false ;;
		esac
		;;
	cli) true ;;
	*) false ;;
	esac
}

n=0
bad=0
for f in src/*/*.[ch] solver/*.[ch]; do
	case $f in src/model/catalog_data.c) continue ;; esac
	folder=${f%/*}
	folder=${folder#src/}
	for h in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
		[ "$h" = config.h ] && continue
		n=$((n + 1))
		if ! allowed "$folder" "$f" "$h"; then
			echo "  $f includes $h" >&2
			bad=$((bad + 1))
		fi
	done
done
if [ "$bad" -eq 0 ] && [ "$n" -gt 150 ]; then ok; else fail "$bad include(s) against the layer rules (of $n checked)"; fi

# Module graph: "A B" when a file of module A includes B's header (X_int.h
# is module X's own).
for f in src/*/*.[ch] solver/*.[ch]; do
	case $f in src/model/catalog_data.c) continue ;; esac
	d=${f%/*}
	d=${d#src/}
	s=$(basename "$f")
	s=${s%.[ch]}
	s=${s%%_*}
	for h in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
		[ "$h" = config.h ] && continue
		hs=$(basename "$h" .h)
		hs=${hs%_int}
		[ "$d/$s" = "${h%/*}/$hs" ] || echo "$d/$s ${h%/*}/$hs"
	done
done >"$TMP/deps"
if tsort "$TMP/deps" >/dev/null 2>"$TMP/err"; then ok; else fail "an include cycle between modules"; fi

# Functions over 150 lines: a definition starts at a line that opens a
# function at column 0 and ends at the next "}" at column 0.
awk 'FNR == 1 { start = 0 }
	/^[a-z].*\(/ && !/;$/ { start = FNR; name = $0 }
	/^}/ && start { n = FNR - start
		if (n > 150)
			printf "  %s:%d: %d lines: %s\n", FILENAME, start, n, name
		start = 0 }' \
	src/*/*.c solver/*.c >"$TMP/long"
if [ ! -s "$TMP/long" ]; then ok; else
	cat "$TMP/long" >&2
	fail "functions over 150 lines"
fi

finish
