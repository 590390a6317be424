#!/usr/bin/env bash
# whisper.cpp for bench/whisper_cpp_bench.py: the whisper.cpp that the pywhispercpp 1.5.1
# sdist on PyPI vendors (the version of the pywhispercpp wheel the benchmark runs), unpacked
# (its models/convert-h5-to-ggml.py makes the ggml files) and its whisper-quantize built
# (q8_0, q5_0, q4_0), CPU only, the machine's own instruction set, no OpenMP.
#
#   bash bench/whisper_cpp_build.sh     # 2026-11-28: 20 min (1187 s) at -j2, nice 10, on 2 cores under load 16-20
#
# Where (the benchmark looks in the same place): $TENSORVM_WHISPER_CPP, else
# $TENSORVM_BENCH_CACHE/whisper.cpp, else bench/.cache/whisper.cpp. Knobs: JOBS (2).
# The sdist is fetched with curl, its sha256 checked: `pip download --no-binary` fails on it
# (its metadata says version 0.0.0).
set -euo pipefail

VERSION=1.5.1
URL=https://files.pythonhosted.org/packages/9f/35/610787a277e177e6b7983277a35a2969c0876b46c0d889bc6a0c4b4ac4a7/pywhispercpp-$VERSION.tar.gz
SHA=5df897e5dd9d9f16804fc937bd85b9f5880a0b29a55f8843585e0e03d76195e5
JOBS=${JOBS:-2}
REPO=$(cd "$(dirname "$0")/.." && pwd)
if [[ -n "${TENSORVM_WHISPER_CPP:-}" ]]; then DEST=$TENSORVM_WHISPER_CPP
elif [[ -n "${TENSORVM_BENCH_CACHE:-}" ]]; then DEST=$TENSORVM_BENCH_CACHE/whisper.cpp
else DEST=$REPO/bench/.cache/whisper.cpp; fi
mkdir -p "$DEST"
cd "$DEST"

sdist=pywhispercpp-$VERSION.tar.gz
if [[ ! -f $sdist ]]; then
    curl -fsSL -o "$sdist.part" "$URL"
    echo "$SHA  $sdist.part" | sha256sum -c --quiet
    mv "$sdist.part" "$sdist"
fi
[[ -f pywhispercpp-$VERSION/whisper.cpp/CMakeLists.txt ]] || tar xzf "$sdist"
src=pywhispercpp-$VERSION/whisper.cpp

start=$(date +%s)
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src" -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
    -DWHISPER_BUILD_TESTS=OFF -DWHISPER_BUILD_SERVER=OFF -DWHISPER_SDL2=OFF -DWHISPER_CURL=OFF -DGGML_OPENMP=OFF \
    "${launcher[@]}" > build-configure.log
cmake --build build -j"$JOBS" --target whisper-quantize
echo "whisper_cpp_build: $DEST/build/bin/whisper-quantize in $(( $(date +%s) - start )) s"
