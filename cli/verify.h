// tensorvm-run PROGRAM verify: reruns the example inputs bundled in a program directory
// (`tensorvm bundle`, pycompiler/bundle.py: bundle.json and its safetensors files) and
// compares each output with the one stored: integers and bools exactly, floats within
// |got - expected| <= atol + rtol * |expected|. How a port to a new device or ISA is
// checked (docs/runtime.md "Bundled checks").
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/npz.h"
#include "vm/vm.h"

namespace cli {

// Prints a line per output (its max error, or how many values differ) and a summary;
// returns 0 when every output passes, 1 otherwise. A missing or malformed bundle is a
// vm::Error.
int run_verify(const std::string& dir, const std::shared_ptr<const vm::Program>& program,
               const vm::SessionOptions& options);

// The arrays of the file a case names (its "arrays": bundle-<digest>.safetensors).
using BundleArrays = std::function<std::vector<io::ArrayData>(const std::string& file)>;

// run_verify's work on a bundle whose manifest is already read: `manifest_text` is
// bundle.json's text (`manifest_path` names it in messages) and `read_arrays` reads
// the file a case names, so the fuzz target (tests/fuzz/fuzz_bundle.cpp) feeds a bundle
// from memory. `hook`, when given, watches every run (the fuzz target's limits).
int verify_bundle(const std::string& manifest_text, const std::string& manifest_path, const BundleArrays& read_arrays,
                  const std::shared_ptr<const vm::Program>& program, const vm::SessionOptions& options,
                  vm::Hook* hook = nullptr);

}  // namespace cli
