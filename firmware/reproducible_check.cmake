# Test: build the firmware twice in two fresh directories and compare bytes.
# Prints the size and layout of the image (acceptance: "its size and layout
# are reported").
foreach(d a b)
  file(REMOVE_RECURSE ${WORK_DIR}/${d})
  execute_process(COMMAND ${CMAKE_COMMAND} -DSDCC=${SDCC} -DSRC_DIR=${SRC_DIR} -DINC_DIR=${INC_DIR}
                          -DOUT_DIR=${WORK_DIR}/${d} -DPACK=${PACK} -P ${SCRIPT}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(rc)
    message(FATAL_ERROR "firmware build ${d} failed")
  endif()
  file(SHA256 ${WORK_DIR}/${d}/bridge_fw.img sha_${d})
  file(SIZE ${WORK_DIR}/${d}/bridge_fw.img size_${d})
endforeach()
message("image a: ${size_a} bytes sha256 ${sha_a}")
message("image b: ${size_b} bytes sha256 ${sha_b}")
if(NOT sha_a STREQUAL sha_b)
  message(FATAL_ERROR "firmware build is not reproducible: two builds differ")
endif()
if(DEFINED REFERENCE)
  file(SHA256 ${REFERENCE} sha_ref)
  if(NOT sha_ref STREQUAL sha_a)
    message(FATAL_ERROR "the build tree's image differs from a fresh build (stale build?)")
  endif()
endif()
message("reproducible: yes")
