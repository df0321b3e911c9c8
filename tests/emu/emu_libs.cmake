# The 8051 emulator and the ASM2464PD model as libraries: included by tests/emu/CMakeLists.txt and
# by the runtime's standalone (aarch64) build for capgraph-run-fake-usbfs (targets/amd).
# Needs capgraph_bridge_protocol and capgraph_usb_bridge.
set(emu_dir ${CMAKE_CURRENT_LIST_DIR})
add_library(capgraph_emu8051 STATIC ${emu_dir}/cpu8051.cpp)
target_include_directories(capgraph_emu8051 PUBLIC ${emu_dir})

add_library(capgraph_asm2464_model STATIC ${emu_dir}/asm2464_model.cpp ${emu_dir}/pcie_endpoint.cpp
                                          ${emu_dir}/pcie_fabric.cpp ${emu_dir}/emu_transport.cpp
                                          ${emu_dir}/phy_tuning.cpp)
# The model takes the bridge's registers and the PHY tuning table from the firmware's regs.h
# (bridge_regs.h).
set_source_files_properties(${emu_dir}/asm2464_model.cpp ${emu_dir}/phy_tuning.cpp PROPERTIES
                            INCLUDE_DIRECTORIES ${emu_dir}/../../firmware/src)
target_link_libraries(capgraph_asm2464_model PUBLIC capgraph_emu8051 capgraph_bridge_protocol
                                                    capgraph_usb_bridge)
