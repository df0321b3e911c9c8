# targets/null in the runtime (included by runtime/CMakeLists.txt when CAPGRAPH_TARGETS has null):
# its HCQ target (encoder, NullKernel decoding, registration) and its transport, the null device.
list(APPEND CAPGRAPH_RUNTIME_SOURCES
  ../targets/null/null_hcq.cpp
  ../targets/null/null_device.cpp)
list(APPEND CAPGRAPH_RUNTIME_INCLUDES ${CMAKE_CURRENT_LIST_DIR})
