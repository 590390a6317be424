# Shared by the package shims next to this file (used by the cross toolchain files one level up):
# a directory in the build tree holding links to the host's header-only libraries and nothing
# else, so adding it to the include path cannot shadow the cross compiler's C library headers.
# Override the source of the headers with -DTENSORVM_HOST_INCLUDE=... (default /usr/include).
include_guard(GLOBAL)
set(TENSORVM_HOST_INCLUDE /usr/include CACHE PATH "where the header-only dependencies' headers are")
# TENSORVM_HEADER_ONLY_DIR puts the links elsewhere: builds that share it (.ci/wasm's two
# WebAssembly builds) compile with the same -isystem path, so ccache reuses their objects.
set(TENSORVM_HEADER_ONLY_DIR ${CMAKE_BINARY_DIR}/header-only-include CACHE PATH "where the links to the header-only dependencies go")
set(_tvm_hdr ${TENSORVM_HEADER_ONLY_DIR} CACHE INTERNAL "links to the header-only dependencies")
file(MAKE_DIRECTORY ${_tvm_hdr})
foreach(_tvm_link fmt nlohmann catch2 eigen3/Eigen eigen3/unsupported)
  get_filename_component(_tvm_name ${_tvm_link} NAME)
  if(NOT EXISTS ${TENSORVM_HOST_INCLUDE}/${_tvm_link})
    message(FATAL_ERROR "header-only dependency ${TENSORVM_HOST_INCLUDE}/${_tvm_link} is missing "
                        "(apt-get install libeigen3-dev libfmt-dev nlohmann-json3-dev catch2)")
  endif()
  file(CREATE_LINK ${TENSORVM_HOST_INCLUDE}/${_tvm_link} ${_tvm_hdr}/${_tvm_name} SYMBOLIC)
endforeach()

function(_tvm_header_only_target name)
  if(NOT TARGET ${name})
    add_library(${name} INTERFACE IMPORTED GLOBAL)
    set_target_properties(${name} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${_tvm_hdr} ${ARGN})
  endif()
endfunction()
