# Catch2 v2 (single header catch2/catch.hpp); Catch.cmake (catch_discover_tests) comes from the
# host's package: it runs the test binary through CMAKE_CROSSCOMPILING_EMULATOR.
include(${CMAKE_CURRENT_LIST_DIR}/header_only_deps.cmake)
_tvm_header_only_target(Catch2::Catch2)
list(APPEND CMAKE_MODULE_PATH /usr/lib/cmake/Catch2)
