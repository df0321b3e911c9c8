# capgraph_host_headers(NAME HOST_INCLUDE_DIR OUT_VAR): an include directory holding only the
# header folder NAME from HOST_INCLUDE_DIR. Header-only, architecture-independent libraries
# (flatbuffers, doctest) are used from the host when cross-compiling, but the host's
# /usr/include cannot go on a cross compiler's path: it would shadow the target's libc headers.
# Natively the host directory is used as it is.
function(capgraph_host_headers name host_dir out_var)
  if(NOT CMAKE_CROSSCOMPILING)
    set(${out_var} ${host_dir} PARENT_SCOPE)
    return()
  endif()
  set(dir ${CMAKE_BINARY_DIR}/host_headers/${name})
  file(MAKE_DIRECTORY ${dir})
  file(CREATE_LINK ${host_dir}/${name} ${dir}/${name} SYMBOLIC)
  set(${out_var} ${dir} PARENT_SCOPE)
endfunction()
