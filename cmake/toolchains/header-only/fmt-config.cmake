# fmt in header-only mode (FMT_HEADER_ONLY): no compiled libfmt for the target is needed.
include(${CMAKE_CURRENT_LIST_DIR}/header_only_deps.cmake)
_tvm_header_only_target(fmt::fmt-header-only INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
_tvm_header_only_target(fmt::fmt INTERFACE_LINK_LIBRARIES fmt::fmt-header-only)
