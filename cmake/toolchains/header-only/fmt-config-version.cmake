include(${CMAKE_CURRENT_LIST_DIR}/header_only_version.cmake)
tvm_header_only_version(fmt/core.h FMT_VERSION "" "")
