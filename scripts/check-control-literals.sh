#!/usr/bin/env bash
# The control plane's names live in one table: no KServe method name and no model state is
# written as a string literal in the C and C++ sources outside the files that own them.
#   the table:  src/protocol/control_methods.hpp (method names, their messages and routes)
#   the codecs: src/protocol/control_codec.cpp, src/protocol/settings_codec.cpp
#   the states: include/sonic/metadata.hpp (ModelState and its wire names)
# Status code names that share a model state's spelling ("UNAVAILABLE") are allowed where status
# codes are named (include/sonic/error.hpp, bindings/c/sonic.h), and so is "READY" as the name
# of the control input of Triton's sequence examples (server/include/sonic/example_models.hpp).
# Comments may name anything.
# Tests are not checked: they quote the wire on purpose. The Python package names methods as
# tritonclient's API and protobuf stubs do.
# Usage: scripts/check-control-literals.sh [SOURCE_DIR]; exits 1, naming each line, on a find.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
table=src/protocol/control_methods.hpp
methods=$(grep -oE '^ +\{ControlMethod::[A-Za-z]+, "[A-Za-z]+"' "$table" | grep -oE '"[A-Za-z]+"' | tr -d '"')
[[ $(wc -w <<<"$methods") -ge 18 ]] || { echo "cannot read the method names of $table" >&2; exit 2; }
methods+=" ModelInfer ModelStreamInfer"
names=$(tr ' \n' '||' <<<"$methods" | sed 's/|*$//; s/^|*//; s/||*/|/g')
pattern="\"($names|READY|UNAVAILABLE|LOADING|UNLOADING)\"|\"inference\\.\" *\\+"
allowed="^($table|src/protocol/control_codec.cpp|src/protocol/settings_codec.cpp|include/sonic/metadata.hpp|include/sonic/error.hpp|bindings/c/sonic.h|server/include/sonic/example_models.hpp):"
found=$(git ls-files -- include src server transports tools bindings |
  grep -E '\.(cpp|hpp|h|c)$' | xargs grep -nE "$pattern" | grep -vE "$allowed" |
  grep -vE '^[^:]+:[0-9]+:([^"]*//| *(/\*|\*))' || true)
if [[ -n $found ]]; then
  echo "control method names or model states written outside the table ($table):" >&2
  echo "$found" >&2
  exit 1
fi
echo "control literals: none outside the table and the codecs"
