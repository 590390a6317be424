include(${CMAKE_CURRENT_LIST_DIR}/header_only_version.cmake)
tvm_header_only_version(eigen3/Eigen/src/Core/util/Macros.h EIGEN_WORLD_VERSION EIGEN_MAJOR_VERSION EIGEN_MINOR_VERSION)
