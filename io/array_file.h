// Files of named arrays for the command lines' --inputs/--outputs: .npz (numpy.savez)
// or .safetensors, so `tensorvm run` and `tensorvm-run` take the same files.
#pragma once

#include <string>
#include <vector>

#include "io/npz.h"

namespace io {

// The arrays of an .npz or a .safetensors file, told apart by their first bytes
// (a ZIP signature, or a safetensors header length followed by '{'). Throws WeightsError.
std::vector<ArrayData> read_arrays(const std::string& path);

// Writes .npz or .safetensors, chosen by the name's extension; anything else is a
// WeightsError. Atomic, like both writers.
void write_arrays(const std::string& path, const std::vector<TensorToWrite>& arrays);

// True when write_arrays knows the extension of `path`.
bool is_array_file_name(const std::string& path);

}  // namespace io
