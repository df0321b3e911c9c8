#!/bin/sh
# Checks that the shipped runtime binaries carry no test rig: no fake device, emulator or model of
# a bridge or GPU among their symbols (`nm -C`, defined or not). The fakes live in
# targets/<family>/fake and reach only the capgraph CLI, capgraph-run-fakes and the tests.
# usage: no_rigs_test.sh NM FILE...
nm=${1:-nm}; shift
rigs='fake|emulat|rdna3|ir3_emu|cpu8051|asm2464|gfx1100_model|Gfx1100|EmuTransport|host_twins_plant'
status=0
for f in "$@"; do
  syms=$("$nm" -C "$f" 2>/dev/null; "$nm" -C -D "$f" 2>/dev/null)
  [ -n "$syms" ] || { echo "FAIL $f: nm found no symbols"; status=1; continue; }
  # The sanitizer runtimes linked into an ASan build have their own "fake stack": not ours.
  found=$(echo "$syms" | grep -vE '__(asan|lsan|ubsan|sanitizer)(::|_)' | grep -iE "$rigs" | head -5)
  if [ -n "$found" ]; then
    echo "FAIL $(basename "$f") carries test rigs:"; echo "$found" | sed 's/^/  /'; status=1
  else
    echo "ok   $(basename "$f"): $(echo "$syms" | wc -l) symbols, none of a fake or emulator"
  fi
done
exit $status
