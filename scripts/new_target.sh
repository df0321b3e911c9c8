#!/usr/bin/env bash
# new_target.sh NAME: starts a device family. Copies targets/null (the template) to targets/NAME,
# renames null to NAME inside it (files, functions, the --target and --device names, the ctests),
# writes its README and adds the one line `capgraph_family(NAME)` to targets/CMakeLists.txt. Nothing
# else changes: after it, configure, build and `ctest -R targets_NAME` pass, with NAME a working
# copy of null (kernels run as host twins on the NAME device) to grow into the real family
# (targets/null/README.md, "How to add a family"). NAME: lowercase letters and digits.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
name=${1:-}
if [[ ! $name =~ ^[a-z][a-z0-9]*$ ]]; then
  echo "usage: new_target.sh NAME (lowercase letters and digits, starting with a letter)" >&2
  exit 2
fi
case $name in cpu | all | null)
  echo "new_target.sh: '$name' is taken (cpu and all are CAPGRAPH_TARGETS words, null the template)" >&2
  exit 1 ;;
esac
dest=$repo/targets/$name
list=$repo/targets/CMakeLists.txt
[[ ! -e $dest ]] || { echo "new_target.sh: $dest exists" >&2; exit 1; }
if grep -q "^capgraph_family($name)$" "$list"; then
  echo "new_target.sh: $list already lists $name" >&2
  exit 1
fi

# The copy, built beside the destination and moved into place only when complete.
work=$(mktemp -d "$repo/targets/.new_$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$repo/targets/null" && git ls-files -co --exclude-standard 2>/dev/null || find . -type f | sed 's|^\./||') |
  while read -r f; do
    [[ -f $repo/targets/null/$f && $f != README.md ]] || continue
    to=$work/${f//null/$name}
    mkdir -p "$(dirname "$to")"
    # What stays null's: the shell's /dev/null, C++'s nullptr, and the schema names the copy keeps
    # using until it has facts of its own (NullKernel, the null_code program format).
    sed -e 's|/dev/null|@DEV_NULL@|g; s|nullptr|@NULLPTR@|g; s|NullKernel|@NULL_KERNEL@|g' \
        -e 's|null_code\b|@NULL_CODE@|g' \
        -e "s|null|$name|g" \
        -e 's|@DEV_NULL@|/dev/null|g; s|@NULLPTR@|nullptr|g; s|@NULL_KERNEL@|NullKernel|g' \
        -e 's|@NULL_CODE@|null_code|g' "$repo/targets/null/$f" > "$to"
    if [[ -x $repo/targets/null/$f ]]; then chmod +x "$to"; fi
  done
cat > "$work/README.md" <<EOF
# targets/$name/

A device family started by \`scripts/new_target.sh $name\` from the null template: today it is
\`targets/null\` under another name (\`--target $name\` captures replay on \`--device $name\`, which
runs each kernel's host twin). Grow it into the real family as \`targets/null/README.md\` ("How to
add a family") describes: its transport in \`drivers/\`, its packets and launch facts, its code
generator in \`compiler/\`, its fake in \`fake/\`; and give it its row in the status table of
\`targets/README.md\` (ctest \`targets_status_test\` asks for it).

| file | what |
|---|---|
| \`CMakeLists.txt\` | the one \`capgraph_add_target($name ...)\` call: everything the build knows of the family |
| \`${name}_hcq.h/.cpp\`, \`${name}_device.cpp\` | the runtime half: encoder, launch facts, device |
| \`compiler/${name}_compile.cpp\` | the compiler half: its entry in the compiler's target table |
| \`${name}_e2e.sh\` | ctests \`targets_${name}_e2e_small\` and \`_zoo\`: compiled for $name, replayed on it, compared with the CPU |
EOF
# A longer name may push a line past the column limit: the tree's format (ctest format_check).
if command -v clang-format-19 > /dev/null; then
  find "$work" -name '*.cpp' -o -name '*.h' | xargs -r clang-format-19 -i
fi
mv "$work" "$dest"
trap - EXIT
# The one line, after the last family.
last=$(grep -n '^capgraph_family(' "$list" | tail -1 | cut -d: -f1)
sed -i "${last}a capgraph_family($name)" "$list"
echo "new_target.sh: targets/$name/ made from targets/null; targets/CMakeLists.txt lists it"
echo "  next: cmake --build build && ctest --test-dir build -R targets_$name"
