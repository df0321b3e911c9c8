# The ir3 (Adreno a6xx) ISA emulator (issue 26): decoder, executor, hazard checker and counters,
# standard library only (the fake KGSL links it, also in the runtime's aarch64 cross build).
add_library(capgraph_ir3_emu STATIC
  ${CMAKE_CURRENT_LIST_DIR}/ir3_decode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ir3_emu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ir3_hazard.cpp)
target_include_directories(capgraph_ir3_emu PUBLIC ${CMAKE_CURRENT_LIST_DIR})
# runtime/hcq/half_float.h (header only: float16 bits to float32, shared with the checks).
target_include_directories(capgraph_ir3_emu PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../../../runtime)
target_compile_features(capgraph_ir3_emu PUBLIC cxx_std_20)
# mad.f32 rounds its product unless ir3_dispatch.mad_fused: the compiler must not fuse a * b + c.
target_compile_options(capgraph_ir3_emu PRIVATE -ffp-contract=off)
find_package(Threads REQUIRED)
target_link_libraries(capgraph_ir3_emu PUBLIC Threads::Threads)

# Real a630 kernels compiled by our compiler (Mesa's ir3), decoded, run and checked against the
# kernel interpreter; without Mesa every case says so and skips.
if(TARGET capgraph_compiler)
  capgraph_add_test(ir3_emu_kernels_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/ir3_emu_kernels_test.cpp
    LIBS capgraph_ir3_emu capgraph_compiler capgraph_onnx_writer LABELS unit TIMEOUT 600)
  target_include_directories(ir3_emu_kernels_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../compiler)
  target_compile_definitions(ir3_emu_kernels_test PRIVATE CAPGRAPH_REPO_DIR="${PROJECT_SOURCE_DIR}")
  # Every zoo kernel rendered as Mesa's disassembly; IR3_ZOO_RUN=1 also runs each model on the
  # emulator alone (minutes of CPU: targets_adreno_e2e_zoo runs them through fake-adreno:check).
  add_test(NAME ir3_emu_models COMMAND ir3_emu_kernels_test -tc=models:*)
  set_tests_properties(ir3_emu_models PROPERTIES LABELS "models" TIMEOUT 900
                       ENVIRONMENT "CAPGRAPH_HALF_RULES_ONLY=1;${CAPGRAPH_TEST_ENV};CAPGRAPH_ADRENO_MODELS=1")
endif()

# Hand-built instruction words: decoding, execution, hazards, counters (no Mesa needed).
capgraph_add_test(ir3_emu_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/ir3_emu_test.cpp
  LIBS capgraph_ir3_emu LABELS unit)
