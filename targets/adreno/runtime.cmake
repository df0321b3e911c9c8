# targets/adreno in the runtime (included by runtime/CMakeLists.txt when CAPGRAPH_TARGETS has
# adreno): the HCQ target (a6xx CP packets, AdrenoKernel checks, registration of device "adreno")
# and its transport, the KGSL driver (drivers/kgsl). Dependency-free (Linux uapi ioctl macros).
list(APPEND CAPGRAPH_RUNTIME_SOURCES
  ../targets/adreno/adreno_hcq.cpp
  ../targets/adreno/adreno_pm4.cpp
  ../drivers/kgsl/kgsl_transport.cpp)
list(APPEND CAPGRAPH_RUNTIME_INCLUDES ${CMAKE_CURRENT_LIST_DIR} ${CMAKE_CURRENT_LIST_DIR}/../../drivers/kgsl)
