#!/bin/sh
# Runs the aarch64 build of the runtime's unit tests (built by the capgraph_runtime_aarch64
# target with runtime/cmake/aarch64-linux-gnu.cmake) under qemu-aarch64. Exit 77 = skipped.
# usage: aarch64_qemu_test.sh AARCH64_BUILD_DIR CROSS_CXX CTEST
dir=$1; cxx=$2; ctest=${3:-ctest}
if [ -z "$cxx" ] || [ "${cxx%NOTFOUND}" != "$cxx" ]; then
  echo "SKIPPED: aarch64-linux-gnu-g++ was not found when configuring; install g++-aarch64-linux-gnu and reconfigure"
  exit 77
fi
if ! command -v qemu-aarch64 >/dev/null 2>&1; then
  echo "SKIPPED: qemu-aarch64 not found; install qemu-user"
  exit 77
fi
if [ ! -f "$dir/CTestTestfile.cmake" ]; then
  echo "FAIL: no aarch64 build in $dir; build the target capgraph_runtime_aarch64 first"
  exit 1
fi
exec "$ctest" --test-dir "$dir" --output-on-failure -L unit
