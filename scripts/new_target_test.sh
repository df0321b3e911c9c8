#!/usr/bin/env bash
# new_target_test.sh: ctest `new_target_template`, so the null template cannot rot. In a scratch
# copy of this tree (its tracked and untracked files, committed to a fresh git repository there):
#   1. scripts/new_target.sh demo, then `git status --porcelain` must list only targets/demo/ and
#      targets/CMakeLists.txt, whose diff must be the one added line;
#   2. a configure (CPU and the demo family only, no Mesa): the generated registration must call
#      target_demo_register, the compiler's table must hold demo_target_entry, ctest must list
#      targets_demo_e2e_small and targets_demo_e2e_zoo;
#   3. the demo family's own object files compiled (its runtime and compiler halves).
# A full build and `ctest -R targets_demo` is what a person runs after new_target.sh (its README);
# it takes the whole tree's build time, more than this test may.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v git > /dev/null || { echo "SKIPPED: git is needed"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

(cd "$repo" && git ls-files -co --exclude-standard -z 2> /dev/null | tar --null -T - -cf - 2> /dev/null) |
  tar -xf - -C "$work" || fail "copying the tree"
[[ -f $work/scripts/new_target.sh ]] || fail "the copy has no scripts/new_target.sh (not a git checkout?)"
cd "$work" && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm tree || fail "git init"

bash scripts/new_target.sh demo > log 2>&1 || { cat log; fail "new_target.sh demo"; }
rm -f log
status=$(git status --porcelain)
expected=$' M targets/CMakeLists.txt\n?? targets/demo/'
[[ $status == "$expected" ]] || fail "git status after new_target.sh is not just the folder and the line:"$'\n'"$status"
added=$(git diff -U0 targets/CMakeLists.txt | grep -c '^+[^+]')
removed=$(git diff -U0 targets/CMakeLists.txt | grep -c '^-[^-]')
[[ $added == 1 && $removed == 0 ]] || fail "targets/CMakeLists.txt: $added lines added, $removed removed (want 1, 0)"
leftover=$(grep -rhoE --exclude=README.md '[A-Za-z_/]*null[A-Za-z_]*' targets/demo | sort -u |
  grep -vE '^(nullptr|NullKernel|null_code|facts_as_NullKernel|CreateNullKernel|/dev/null)$' || true)
[[ -z $leftover ]] || fail "targets/demo still says null: $leftover"
echo "PASS: new_target.sh demo adds targets/demo/ and one line"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCAPGRAPH_TARGETS=cpu;demo" -DCAPGRAPH_ADRENO=OFF \
  -DCAPGRAPH_AARCH64_TEST=OFF > configure.log 2>&1 || { tail -30 configure.log; fail "configure"; }
grep -q 'target_demo_register' build/targets/targets_builtin.cpp || fail "the runtime does not register demo"
grep -q 'demo_target_entry' build/targets/target_list.inc || fail "the compiler's table has no demo entry"
tests=$(ctest --test-dir build -N -R targets_demo)
for t in targets_demo_e2e_small targets_demo_e2e_zoo; do
  grep -q "$t" <<< "$tests" || fail "ctest does not list $t:"$'\n'"$tests"
done
echo "PASS: configured with the demo family (registration, compiler table, ctests)"

objects=$(ninja -C build -t targets all | grep -oE '^[^:]*targets/demo/[^:]*\.o' | sort -u)
[[ -n $objects ]] || fail "no object files of targets/demo in the build"
# shellcheck disable=SC2086
ninja -C build $objects > build.log 2>&1 || { tail -30 build.log; fail "compiling targets/demo"; }
echo "PASS: the demo family compiles ($(wc -w <<< "$objects") object files)"
