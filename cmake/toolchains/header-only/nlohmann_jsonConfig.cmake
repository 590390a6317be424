include(${CMAKE_CURRENT_LIST_DIR}/header_only_deps.cmake)
_tvm_header_only_target(nlohmann_json::nlohmann_json)
