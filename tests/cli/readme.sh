#!/bin/sh
# README.md shows what its example commands print today.
. "$(dirname "$0")/../lib.sh"
if [ -n "$HX_VALGRIND" ]; then
	echo "readme.sh: outputs are compared without valgrind"
fi
HEXPLAN="$HEXPLAN" python3 tests/readme-outputs --check
