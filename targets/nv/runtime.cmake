# targets/nv in the runtime (included by runtime/CMakeLists.txt when CAPGRAPH_TARGETS has nv): the
# HCQ target (push-buffer methods and QMDs as data, the encoders, NvKernel decoding) and its
# transport, the RM/UVM driver (drivers/nv). Dependency-free (no NVIDIA header or library).
list(APPEND CAPGRAPH_RUNTIME_SOURCES
  ../targets/nv/nv_hcq.cpp
  ../targets/nv/nv_qmd.cpp
  ../targets/nv/nv_qmd_table.cpp
  ../targets/nv/nv_methods.cpp
  ../targets/nv/nv_methods_table.cpp
  ../drivers/nv/nv_transport.cpp)
list(APPEND CAPGRAPH_RUNTIME_INCLUDES ${CMAKE_CURRENT_LIST_DIR} ${CMAKE_CURRENT_LIST_DIR}/../../drivers/nv
  ${CMAKE_CURRENT_LIST_DIR}/../..)
