include(${CMAKE_CURRENT_LIST_DIR}/header_only_deps.cmake)
_tvm_header_only_target(Eigen3::Eigen)
