// .npz files as numpy.savez writes them: a ZIP archive of uncompressed ("stored")
// NAME.npy members. A small strict reader and writer, so the C++ command line takes
// the same input files as `tensorvm run` without zlib or numpy.
// Supported: stored members only (not savez_compressed), ZIP64 size fields (numpy
// always writes them in the local headers), .npy format 1.0/2.0/3.0, little-endian
// f4/i8/i4, b1 and i1 in C or Fortran order. Anything else is a WeightsError that
// names the file, the member and what is wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace io {

// One array, owning its bytes (also what io/array_file.h reads from safetensors).
struct ArrayData {
  std::string name;  // the member name without ".npy" (np.savez's keyword, or arr_N)
  std::string dtype;  // safetensors spelling: "F32", "I64", "I32", "BOOL", "I8", "F16"
  std::vector<int64_t> shape;
  std::vector<unsigned char> data;  // C order, little-endian
};

// The arrays of an .npz in the archive's order. `what` names the source in errors.
std::vector<ArrayData> parse_npz(const void* bytes, size_t size, const std::string& what);
std::vector<ArrayData> read_npz(const std::string& path);

// One .npy member (the bytes of NAME.npy).
ArrayData parse_npy(const void* bytes, size_t size, const std::string& what);

// Writes an .npz numpy.load reads (stored members NAME.npy, .npy format 1.0),
// atomically. Same dtypes as the reader; each member must stay below 4 GiB.
void write_npz(const std::string& path, const std::vector<TensorToWrite>& arrays);

}  // namespace io
