# Cross-compiles tensorvm for 64-bit ARM Linux with Debian's g++-aarch64-linux-gnu:
#   cmake -S . -B build/arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DTENSORVM_NATIVE=OFF
# Binaries run on an x86 host under qemu-user (qemu-aarch64 -L /usr/aarch64-linux-gnu), which is
# also the emulator CMake uses to list the Catch2 tests and ctest uses to run them.
# The dependencies (Eigen, fmt, nlohmann-json, Catch2 v2) are taken header-only from the host's
# -dev packages through cmake/toolchains/header-only, so no arm64 libraries are needed: see there.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(TENSORVM_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${TENSORVM_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${TENSORVM_CROSS_TRIPLE}-g++)
set(TENSORVM_CROSS_SYSROOT /usr/${TENSORVM_CROSS_TRIPLE})
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L ${TENSORVM_CROSS_SYSROOT})

# Libraries and headers from the target's sysroot only; programs (ninja, python) from the host.
set(CMAKE_FIND_ROOT_PATH ${TENSORVM_CROSS_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The host's package configs cannot be used as they are: fmt's links the x86 libfmt.so, and the
# others add -isystem /usr/include, which puts the host's C headers before the cross compiler's
# own (libstdc++'s #include_next <stdlib.h> then breaks). The shims in header-only/ give the
# same target names over a directory holding only these libraries' headers.
foreach(pkg Eigen3 fmt nlohmann_json Catch2)
  set(${pkg}_DIR ${CMAKE_CURRENT_LIST_DIR}/header-only CACHE PATH "header-only ${pkg} for cross builds")
endforeach()
