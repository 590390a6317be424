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

# Emscripten pthreads (SharedArrayBuffer: a page must be cross-origin isolated; Node always
# has it). Off: one thread, and a Session asked for more runs on one (core/thread_pool.cpp).
# Only the SIMD build is built threaded (.ci/wasm: build/wasm/simd-mt): an engine with
# SharedArrayBuffer and cross-origin isolation has SIMD128 too.
option(TENSORVM_WASM_THREADS "Build with Emscripten pthreads" OFF)
set(TENSORVM_WASM_POOL_SIZE 4 CACHE STRING "Emscripten pthreads started before main (the most threads a pool gets)")
# Emscripten 3.1.6 (Debian) ships prebuilt libc++ with JavaScript-based exception support
# only (its cache is frozen, so the -fwasm-exceptions variants cannot be built): the runtime
# reports every error as a C++ exception, so catching must be on everywhere.
add_compile_options(-fexceptions)
add_link_options(-fexceptions -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sTOTAL_STACK=4MB)
if(TENSORVM_WASM_THREADS)
  add_compile_options(-pthread)
  # The pool cap: a ThreadPool never asks for more threads than exist (core/thread_pool.cpp).
  add_compile_definitions(TENSORVM_WASM_POOL_SIZE=${TENSORVM_WASM_POOL_SIZE})
  # Workers started before main, so a ThreadPool's threads exist when it first waits on them:
  # a blocked thread (Node's main thread, the page's worker) cannot start a worker, so one
  # started on demand would never run. STRICT=2: past the pool, pthread_create fails
  # instead of hanging, and a ThreadPool runs on the threads it got.
  # pthreads-mem-growth: growing a shared memory makes JavaScript's views of the heap
  # re-check their buffer on each access; tensorvm's work is all in wasm, and without growth
  # every page would reserve the largest program's memory up front, so the warning is
  # silenced knowingly (docs/web.md).
  add_link_options(-pthread -sPTHREAD_POOL_SIZE=${TENSORVM_WASM_POOL_SIZE} -sPTHREAD_POOL_SIZE_STRICT=2
                   -Wno-pthreads-mem-growth)
endif()

# The text library (tokenizers) for WebAssembly: sentencepiece and PCRE2 compiled here from
# the sources .ci/wasm-text-sources fetches (cmake/wasm_text.cmake). Empty: no text library.
set(TENSORVM_WASM_TEXT_SOURCES "" CACHE PATH "Folder of sentencepiece and PCRE2 sources for the wasm text library")
if(TENSORVM_WASM_TEXT_SOURCES)
  include(${CMAKE_CURRENT_LIST_DIR}/wasm_text.cmake)
endif()
