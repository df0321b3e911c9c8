#!/bin/sh
# avx2_only.so (LD_PRELOAD) hides AVX-512 from CPUID and keeps AVX2, and a real segmentation fault
# still kills the process. Skipped (exit 77) where the CPU has no AVX-512 to hide or the kernel no
# CPUID faulting: nothing can be checked there.
set -u
tools=$1
probe=$tools/cpuid_probe
lib=$tools/libavx2_only.so
plain=$("$probe") || { echo "FAIL: cpuid_probe failed"; exit 1; }
echo "host: $plain"
case $plain in *"avx512f 1"*) ;; *) echo "SKIP: this CPU reports no AVX-512 to hide"; exit 77 ;; esac
grep -qw cpuid_fault /proc/cpuinfo || { echo "SKIP: no CPUID faulting (cpuid_fault) here"; exit 77; }
masked=$(AVX2_ONLY_VERBOSE=1 LD_PRELOAD=$lib "$probe" 2>"$tools/avx2_only_test.err") || { echo "FAIL: probe under avx2_only failed"; cat "$tools/avx2_only_test.err"; exit 1; }
echo "masked: $masked; $(cat "$tools/avx2_only_test.err")"
[ "$masked" = "avx2 1 avx512f 0 avx512vl 0 avx512bw 0" ] || { echo "FAIL: expected AVX2 kept and AVX-512 hidden"; exit 1; }
grep -q "[1-9][0-9]* CPUID instruction" "$tools/avx2_only_test.err" || { echo "FAIL: no CPUID trapped"; exit 1; }
LD_PRELOAD=$lib "$probe" segv >/dev/null 2>&1
rc=$?
[ $rc -eq 139 ] || { echo "FAIL: a null dereference under avx2_only exited $rc, expected death by SIGSEGV (139)"; exit 1; }
owned=$(LD_PRELOAD=$lib "$probe" own-handler 2>/dev/null)
rc=$?
[ "$owned" = "avx2 1 avx512f 0 avx512vl 0 avx512bw 0" ] || { echo "FAIL: after the program installed its own SIGSEGV handler CPUID read: $owned"; exit 1; }
[ $rc -eq 3 ] || { echo "FAIL: the program's own SIGSEGV handler did not see its fault (exit $rc, expected 3)"; exit 1; }
echo "PASS"
