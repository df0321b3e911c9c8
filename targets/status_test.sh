#!/usr/bin/env bash
# status_test.sh BUILD_DIR: ctest `targets_status_test`. targets/README.md's status table (between
# its <!-- status --> markers) is the one place per-family status is written; this checks it
# against what the build registers: one row per family of targets/CMakeLists.txt (and cpu), and
# exactly the --target names and --device names `capgraph --help` lists (from the compiler's table
# and the runtime's device registry), each in one row.
set -uo pipefail
build=${1:?usage: status_test.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
capgraph=$build/cli/capgraph
[[ -x $capgraph ]] || { echo "SKIPPED: no $capgraph (the status table lists the CLI's names)"; exit 77; }
table=$(sed -n '/<!-- status -->/,/<!-- \/status -->/p' "$here/README.md" | grep '^| [a-z]' | grep -v '^| family ')
[[ -n $table ]] || { echo "FAIL: no status table in $here/README.md"; exit 1; }
fail=0
same() {  # same WHAT "table list" "build list"
  local a b
  a=$(tr ' ' '\n' <<< "$2" | grep . | sort); b=$(tr ' ' '\n' <<< "$3" | grep . | sort)
  if [[ $a != "$b" ]]; then
    echo "FAIL: the status table's $1 are not the build's:"
    diff <(echo "$a") <(echo "$b") | sed 's/^</  table:/; s/^>/  build:/' | grep ':'
    fail=1
  else
    echo "ok: $1: $(echo $a)"
  fi
}
column() { awk -F'|' -v c="$1" '{print $c}' <<< "$table" | grep -o '`[^`]*`' | tr -d '`' | tr '\n' ' '; }
families_table=$(awk -F'|' '{gsub(/ /, "", $2); print $2}' <<< "$table" | tr '\n' ' ')
families_build="cpu $(sed -n 's/^capgraph_family(\([a-z0-9]*\))$/\1/p' "$here/CMakeLists.txt" | tr '\n' ' ')"
same families "$families_table" "$families_build"
help=$("$capgraph" --help 2>&1)
targets_build=$(sed -n 's/.*--target \([^]]*\)\].*/\1/p' <<< "$help" | head -1 | tr '|' ' ')
devices_build=$(sed -n 's/^ *--device: //p' <<< "$help" | head -1 | tr '|' ' ')
same "--target names" "$(column 3)" "$targets_build"
same "devices" "$(column 4)" "$devices_build"
exit $fail
