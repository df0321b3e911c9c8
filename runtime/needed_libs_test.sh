#!/bin/sh
# Checks that the runtime's shipped binaries need nothing beyond the C/C++ runtime: their direct
# NEEDED entries (readelf -d) and, natively, everything ldd resolves.
# usage: needed_libs_test.sh READELF SANITIZE(0|1) FILE...
readelf=${1:-readelf}; sanitize=$2; shift 2
allowed='^(libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libpthread\.so\.0|ld-linux[-a-z0-9_.]*\.so\.[0-9]+|linux-vdso\.so\.1)$'
# Sanitizer builds add the sanitizer runtimes' own dependencies: GCC's shared libasan/libubsan,
# and clang's static ASan runtime links libresolv (for its resolver interceptors).
if [ "$sanitize" = 1 ]; then
  allowed='^(libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libresolv\.so\.2|libasan\.so\.[0-9]+|libubsan\.so\.[0-9]+|ld-linux[-a-z0-9_.]*\.so\.[0-9]+|linux-vdso\.so\.1)$'
fi
status=0
for f in "$@"; do
  needed=$("$readelf" -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  [ -n "$needed" ] || { echo "FAIL $f: readelf found no NEEDED entries"; status=1; continue; }
  if command -v ldd >/dev/null 2>&1 && ldd "$f" >/dev/null 2>&1; then
    needed="$needed $(ldd "$f" | awk '{print $1}' | sed 's,.*/,,')"
  fi
  for lib in $needed; do
    if echo "$lib" | grep -Eq "$allowed"; then
      echo "ok   $(basename "$f"): $lib"
    else
      echo "FAIL $(basename "$f") needs $lib, which is outside libc/libm/libstdc++/libgcc_s/ld-linux"
      status=1
    fi
  done
done
exit $status
