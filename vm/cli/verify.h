// tensorvm-run PROGRAM verify: reruns the example inputs bundled in a program directory
// (`tensorvm bundle`, pycompiler/bundle.py: bundle.json and its safetensors files) and
// compares each output with the one stored: integers and bools exactly, floats within
// |got - expected| <= atol + rtol * |expected|. How a port to a new device or ISA is
// checked (docs/runtime.md "Bundled checks").
#pragma once

#include <memory>
#include <string>

#include "vm/vm.h"

namespace cli {

// Prints a line per output (its max error, or how many values differ) and a summary;
// returns 0 when every output passes, 1 otherwise. A missing or malformed bundle is a
// vm::Error.
int run_verify(const std::string& dir, const std::shared_ptr<const vm::Program>& program,
               const vm::SessionOptions& options);

}  // namespace cli
