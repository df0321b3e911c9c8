# capgraph_add_target(NAME ...): declares one device family, from targets/NAME/CMakeLists.txt. One
# call says what the build needs to know of the family; the shared CMake lists (runtime/,
# compiler/, drivers/, cli/, tests/) name no family. Paths are relative to the family's folder.
#
#   FACTS src...          the family's hardware facts (chip ids, sizes, register and packet
#                         layouts), dependency-free, written once: library capgraph_facts, which the
#                         runtime, the compiler, the drivers and the fakes all link
#   RUNTIME src...        compiled into the runtime (libcapgraph_runtime, capgraph-run, the aarch64
#                         build): its HCQ target, packets and transport (drivers/<driver>/...).
#                         Dependency-free. One of them defines capgraph::hcq::target_NAME_register(),
#                         which the runtime calls at its first device lookup.
#   INCLUDES dir...       include directories those sources need (the family's folder is one)
#   COMPILER src...       compiled into the compiler (when it is built) and only when NAME is in
#                         CAPGRAPH_TARGETS; one defines capgraph::NAME_target_entry
#                         (compiler/target/target_table.h). COMPILER_LLVM: those that include LLVM
#                         headers (built without RTTI, as LLVM is).
#   FAKE src...           a fake device for tests and for users without the hardware: library
#   FAKE_REGISTER fn      capgraph_fake_NAME (links the runtime, never linked into it) and the function
#                         that registers its device names (`capgraph --device fake-...`,
#                         capgraph-run-fakes, the tests). A fake can be in no shipped runtime binary.
#   E2E script            ctests targets_NAME_e2e_small and targets_NAME_e2e_zoo (`script small|zoo
#   E2E_TIMEOUT s         BUILD_DIR`, exit 77 to skip; zoo labelled models), 900 s unless given
#   CONFORMANCE tgt dev   the op-conformance suite (tests/e2e) also compiles every case for --target
#                         tgt and replays it on --device dev: ctest op_conformance_NAME. Cases
#                         that cannot pass there are listed, with reasons, in conformance_waivers.txt
#                         beside this file.
#
# Anything else of the family (its unit tests, extra libraries) is plain CMake after the call.

# The families this tree carries (targets/CMakeLists.txt lists them, one capgraph_family line each)
# and those this build carries: CAPGRAPH_TARGETS, "all" (the default) or a ';'-list such as
# "cpu;amd" ("cpu" alone: a CPU-only build, no GPU code generator compiled at all).
set(CAPGRAPH_TARGETS all CACHE STRING "Targets this build carries: all, or a ';'-list of cpu and targets/ folders")
# A build folder configured when the default was an explicit list follows "all" (once).
if(DEFINED CACHE{CAPGRAPH_TARGETS_DEFAULT})
  if("${CAPGRAPH_TARGETS}" STREQUAL "${CAPGRAPH_TARGETS_DEFAULT}")
    set(CAPGRAPH_TARGETS all CACHE STRING "" FORCE)
  endif()
  unset(CAPGRAPH_TARGETS_DEFAULT CACHE)
endif()

# capgraph_family(NAME): targets/NAME is a family of this tree; added when this build carries it.
macro(capgraph_family name)
  set_property(GLOBAL APPEND PROPERTY CAPGRAPH_FAMILIES ${name})
  capgraph_carries(${name} _carried)
  if(_carried)
    add_subdirectory(${name})
  endif()
endmacro()

# capgraph_carries(NAME OUT): whether this build carries family NAME (for a driver's tests).
function(capgraph_carries name out)
  if(CAPGRAPH_TARGETS STREQUAL "all" OR "${name}" IN_LIST CAPGRAPH_TARGETS)
    set(${out} ON PARENT_SCOPE)
  else()
    set(${out} OFF PARENT_SCOPE)
  endif()
endfunction()

# Whether this configure builds the compiler and the CLI (not the runtime's standalone build).
function(capgraph_target_with_compiler out)
  if(TARGET capgraph_compiler)
    set(${out} ON PARENT_SCOPE)
  else()
    set(${out} OFF PARENT_SCOPE)
  endif()
endfunction()

function(capgraph_add_target name)
  cmake_parse_arguments(T "" "FAKE_REGISTER;E2E;E2E_TIMEOUT"
                        "FACTS;RUNTIME;INCLUDES;COMPILER;COMPILER_LLVM;FAKE;CONFORMANCE" ${ARGN})
  if(T_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "capgraph_add_target(${name}): unknown arguments ${T_UNPARSED_ARGUMENTS}")
  endif()
  set_property(GLOBAL APPEND PROPERTY CAPGRAPH_BUILT_FAMILIES ${name})
  capgraph_target_with_compiler(with_compiler)

  # The facts, below everything else.
  if(T_FACTS)
    if(NOT TARGET capgraph_facts)
      add_library(capgraph_facts STATIC ${T_FACTS})
      target_link_libraries(capgraph_runtime_headers INTERFACE capgraph_facts)
      if(TARGET capgraph_compiler)
        target_link_libraries(capgraph_compiler PUBLIC capgraph_facts)
      endif()
    else()
      target_sources(capgraph_facts PRIVATE ${T_FACTS})
    endif()
    target_include_directories(capgraph_facts PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
  endif()

  # The runtime half.
  if(T_RUNTIME)
    target_sources(capgraph_runtime_objects PRIVATE ${T_RUNTIME})
    set(dirs ${CMAKE_CURRENT_SOURCE_DIR})
    foreach(d IN LISTS T_INCLUDES)
      cmake_path(ABSOLUTE_PATH d BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} NORMALIZE)
      list(APPEND dirs ${d})
    endforeach()
    target_include_directories(capgraph_runtime_headers INTERFACE ${dirs})
    set_property(GLOBAL APPEND PROPERTY CAPGRAPH_RUNTIME_REGISTER "target_${name}_register")
  endif()

  # The compiler half.
  if(with_compiler AND (T_COMPILER OR T_COMPILER_LLVM))
    target_sources(capgraph_compiler PRIVATE ${T_COMPILER} ${T_COMPILER_LLVM})
    target_include_directories(capgraph_compiler PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/compiler)
    if(T_COMPILER_LLVM)
      set_source_files_properties(${T_COMPILER_LLVM} TARGET_DIRECTORY capgraph_compiler
                                  PROPERTIES COMPILE_OPTIONS -fno-rtti)
    endif()
    set_property(GLOBAL APPEND PROPERTY CAPGRAPH_COMPILER_ENTRIES "${name}_target_entry")
  endif()

  # The fake device.
  if(T_FAKE)
    add_library(capgraph_fake_${name} STATIC ${T_FAKE})
    target_link_libraries(capgraph_fake_${name} PUBLIC capgraph_runtime capgraph_fake_faults)
    target_include_directories(capgraph_fake_${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/fake)
    if(T_FAKE_REGISTER)
      capgraph_target_device(capgraph_fake_${name} ${T_FAKE_REGISTER})
    endif()
  endif()

  # End to end, through the command line (needs the compiler).
  if(with_compiler AND T_E2E)
    if(NOT T_E2E_TIMEOUT)
      set(T_E2E_TIMEOUT 900)
    endif()
    foreach(mode small zoo)
      add_test(NAME targets_${name}_e2e_${mode}
               COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/${T_E2E} ${mode} ${CMAKE_BINARY_DIR})
      set_tests_properties(targets_${name}_e2e_${mode} PROPERTIES LABELS "e2e;fake"
                           TIMEOUT ${T_E2E_TIMEOUT} SKIP_RETURN_CODE 77)
    endforeach()
    set_tests_properties(targets_${name}_e2e_zoo PROPERTIES LABELS "e2e;fake;models")
  endif()

  # A row of the op-conformance matrix (tests/e2e/CMakeLists.txt adds the test).
  if(T_CONFORMANCE)
    list(LENGTH T_CONFORMANCE n)
    if(NOT n EQUAL 2)
      message(FATAL_ERROR "capgraph_add_target(${name}): CONFORMANCE takes a --target and a --device")
    endif()
    list(GET T_CONFORMANCE 0 target)
    list(GET T_CONFORMANCE 1 device)
    set(waivers "")
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/conformance_waivers.txt)
      set(waivers ${CMAKE_CURRENT_SOURCE_DIR}/conformance_waivers.txt)
    endif()
    set_property(GLOBAL APPEND PROPERTY CAPGRAPH_CONFORMANCE_ROWS "${name}|${target}|${device}|${waivers}")
  endif()
endfunction()

# capgraph_target_device(LIBRARY FUNCTION): a device the capgraph CLI, capgraph-run-fakes and the tests
# offer beyond the runtime's own (fakes, or devices that need a library the runtime may not link,
# such as libusb): the library that has it and the function that registers it
# (e.g. capgraph::amd::fake_amd_register).
function(capgraph_target_device lib fn)
  set_property(GLOBAL APPEND PROPERTY CAPGRAPH_DEVICE_LIBS ${lib})
  set_property(GLOBAL APPEND PROPERTY CAPGRAPH_DEVICE_FNS ${fn})
endfunction()
