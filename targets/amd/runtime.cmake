# targets/amd in the runtime (included by runtime/CMakeLists.txt when CAPGRAPH_TARGETS has amd):
# the HCQ target (PM4/SDMA encoders, AmdKernel decoding), packets and chips as data, and its
# transport, the KFD driver (drivers/kfd). All dependency-free (Linux uapi headers), so the
# runtime still builds alone.
list(APPEND CAPGRAPH_RUNTIME_SOURCES
  ../targets/amd/amd_hcq.cpp
  ../targets/amd/amd_packets.cpp
  ../targets/amd/amd_packets_table.cpp
  ../targets/amd/amd_chips.cpp
  ../drivers/kfd/kfd_transport.cpp
  ../drivers/kfd/kfd_topology.cpp)
list(APPEND CAPGRAPH_RUNTIME_INCLUDES ${CMAKE_CURRENT_LIST_DIR} ${CMAKE_CURRENT_LIST_DIR}/../../drivers/kfd)
# linux/kfd_ioctl.h includes drm/drm.h, which some hosts' kernel headers lack.
include(CheckIncludeFile)
check_include_file(drm/drm.h CAPGRAPH_HAVE_DRM_H)
if(NOT CAPGRAPH_HAVE_DRM_H)
  list(APPEND CAPGRAPH_RUNTIME_INCLUDES ${CMAKE_CURRENT_LIST_DIR}/../../drivers/kfd/uapi_shim)
endif()
