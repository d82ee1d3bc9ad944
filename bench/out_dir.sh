# shellcheck shell=bash
# Sourced by bench/suite.sh and bench/scale.sh: their command line, BUILD_DIR [OUT_DIR], read
# into $build and $results. OUT_DIR defaults to a new BUILD_DIR/bench-results/<UTC time>, so
# that a run never overwrites the committed bench/results/ unless it is named; -h prints the
# usage, and any other count of arguments exits 2.
usage="usage: $0 BUILD_DIR [OUT_DIR]  (OUT_DIR: default BUILD_DIR/bench-results/<UTC time>)"
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  echo "$usage"
  exit 0
fi
[[ $# -ge 1 && $# -le 2 ]] || { echo "$usage" >&2; exit 2; }
build=$1
results=${2:-$build/bench-results/$(date -u +%Y%m%dT%H%M%SZ)}
