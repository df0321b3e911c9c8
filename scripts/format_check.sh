#!/usr/bin/env bash
# format_check.sh [--fix]: every C and C++ file of the tree against the committed .clang-format, with
# Debian's clang-format-19. Exit 1 listing the files that differ (`--fix` rewrites them instead).
# Run by ctest `format_check` (so by scripts/test.sh and CI). Generated files (*.inc, flatc output)
# are not checked: they are not .c/.h/.cpp files of the tree.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
fmt=${CLANG_FORMAT:-clang-format-19}
command -v "$fmt" >/dev/null || { echo "format_check: $fmt not found (scripts/setup.sh installs it)" >&2; exit 77; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -co --exclude-standard -- '*.c' '*.h' '*.cpp' | while read -r f; do [[ -f $f ]] && echo "$f"; done)
else
  mapfile -t files < <(find . -path './build*' -prune -o -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) -print | sed 's|^\./||')
fi
if [[ ${1:-} == --fix ]]; then
  printf '%s\0' "${files[@]}" | xargs -0 "$fmt" -i
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$fmt" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "format_check: ${#bad[@]} of ${#files[@]} files differ from .clang-format (fix: scripts/format_check.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format_check: ${#files[@]} files formatted"
