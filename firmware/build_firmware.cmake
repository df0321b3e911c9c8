# cmake -DSDCC=... -DSRC_DIR=... -DINC_DIR=... -DOUT_DIR=... -DPACK=... -P build_firmware.cmake
# Builds the bridge firmware with SDCC into OUT_DIR/bridge_fw.img and prints
# its size and memory layout. Same inputs give the same bytes: no dates or
# paths end up in the image, the modules are compiled and linked in a fixed
# order, and the packer fills gaps with 0xFF.
foreach(v SDCC SRC_DIR INC_DIR OUT_DIR PACK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "build_firmware.cmake: ${v} not set")
  endif()
endforeach()
set(modules main ep0 deadline usb stream pcie spi serial watch)  # main first: it holds the interrupt vectors
set(cflags -mmcs51 --model-small --std-c99 --opt-code-size -I${SRC_DIR} -I${INC_DIR})
# Code 0x0000-0xBFFF (BRIDGE_IMAGE_MAX_BODY); our globals in XDATA 0x0000-0x0FFF.
set(ldflags --code-loc 0x0000 --code-size 0xC000 --xram-loc 0x0000 --xram-size 0x1000 --iram-size 0x100)
file(MAKE_DIRECTORY ${OUT_DIR})
set(rels)
foreach(m ${modules})
  execute_process(COMMAND ${SDCC} ${cflags} -c ${SRC_DIR}/${m}.c -o ${m}.rel
                  WORKING_DIRECTORY ${OUT_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "sdcc failed on ${m}.c:\n${out}")
  endif()
  list(APPEND rels ${m}.rel)
endforeach()
execute_process(COMMAND ${SDCC} ${cflags} ${ldflags} ${rels} -o bridge_fw.ihx
                WORKING_DIRECTORY ${OUT_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "sdcc link failed:\n${out}")
endif()
execute_process(COMMAND ${PACK} bridge_fw.ihx bridge_fw.img
                WORKING_DIRECTORY ${OUT_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "packing failed:\n${out}")
endif()
message(STATUS "${out}")
file(READ ${OUT_DIR}/bridge_fw.mem mem)
string(REGEX MATCH "ROM/EPROM/FLASH[^\n]*" rom "${mem}")
string(REGEX MATCH "EXTERNAL RAM[^\n]*" xram "${mem}")
string(REGEX MATCH "Stack starts[^\n]*" stack "${mem}")
message(STATUS "layout: ${rom}")
message(STATUS "layout: ${xram}")
message(STATUS "layout: ${stack}")
