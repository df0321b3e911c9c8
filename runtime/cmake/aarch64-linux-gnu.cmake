# Toolchain for cross-building the runtime alone for 64-bit Arm Linux (Debian's
# g++-aarch64-linux-gnu), with tests run under qemu-aarch64 when it is installed:
#   cmake -S runtime -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=$PWD/runtime/cmake/aarch64-linux-gnu.cmake
#   cmake --build build-aarch64 -j2 && ctest --test-dir build-aarch64
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CAPGRAPH_AARCH64_SYSROOT /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH ${CAPGRAPH_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)   # flatc, llc, llvm-mc run on the host
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
find_program(CAPGRAPH_QEMU_AARCH64 qemu-aarch64)
if(CAPGRAPH_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${CAPGRAPH_QEMU_AARCH64} -L ${CAPGRAPH_AARCH64_SYSROOT})
endif()
