# WebAssembly (Emscripten) build settings, included by CMakeLists.txt when configured with
# emcmake (docs/web.md):
#   emcmake cmake -S . -B build/wasm/simd -G Ninja -DTENSORVM_KERNEL_VARIANTS=simd128
#   emcmake cmake -S . -B build/wasm/scalar -G Ninja -DTENSORVM_KERNEL_VARIANTS=scalar
# A WebAssembly module is validated whole before anything runs, so an engine without SIMD128
# refuses a module holding one SIMD instruction even in a function never called: the
# run-time choice between scalar and simd128 is made by the page loading one of two .wasm
# files (examples/web/tensorvm.js tests SIMD128 with WebAssembly.validate first). Inside the
# SIMD build both variants exist and TENSORVM_ISA / set_kernel_variant pick as on x86.
include_guard(GLOBAL)

# Eigen, fmt (header-only mode) and nlohmann-json from the host's -dev packages, as the
# aarch64 cross build takes them (cmake/toolchains/header-only): no wasm libraries needed.
foreach(pkg Eigen3 fmt nlohmann_json Catch2)
  set(${pkg}_DIR ${CMAKE_CURRENT_LIST_DIR}/toolchains/header-only CACHE PATH "header-only ${pkg} for the wasm build")
endforeach()

# Emscripten pthreads (SharedArrayBuffer: the page must be cross-origin isolated). Off: one
# thread, and a Session asked for more runs on one (core/thread_pool.cpp).
option(TENSORVM_WASM_THREADS "Build with Emscripten pthreads" OFF)
# Emscripten 3.1.6 (Debian) ships prebuilt libc++ with JavaScript-based exception support
# only (its cache is frozen, so the -fwasm-exceptions variants cannot be built): the runtime
# reports every error as a C++ exception, so catching must be on everywhere.
add_compile_options(-fexceptions)
add_link_options(-fexceptions -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sTOTAL_STACK=4MB)
if(TENSORVM_WASM_THREADS)
  add_compile_options(-pthread)
  # Workers started before main, so a ThreadPool's threads exist when it first waits on them
  # (a browser's main thread cannot start a worker while it blocks).
  add_link_options(-pthread -sPTHREAD_POOL_SIZE=4)
endif()

# The text library (tokenizers) for WebAssembly: sentencepiece and PCRE2 compiled here from
# the sources .ci/wasm-text-sources fetches (cmake/wasm_text.cmake). Empty: no text library.
set(TENSORVM_WASM_TEXT_SOURCES "" CACHE PATH "Folder of sentencepiece and PCRE2 sources for the wasm text library")
if(TENSORVM_WASM_TEXT_SOURCES)
  include(${CMAKE_CURRENT_LIST_DIR}/wasm_text.cmake)
endif()
