#include "io/array_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace io {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool is_array_file_name(const std::string& path) { return ends_with(path, ".npz") || ends_with(path, ".safetensors"); }

std::vector<ArrayData> read_arrays(const std::string& path) {
  char head[9] = {};
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw WeightsError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    in.read(head, sizeof head);
  }
  if (std::memcmp(head, "PK\x03\x04", 4) == 0 || std::memcmp(head, "PK\x05\x06", 4) == 0) return read_npz(path);
  if (head[8] != '{')
    throw WeightsError(fmt::format("{}: neither an .npz (numpy.savez) nor a .safetensors file", path));
  auto file = WeightsFile::open(path);
  std::vector<ArrayData> out;
  for (const TensorEntry& e : file->entries()) {
    const auto* p = static_cast<const unsigned char*>(e.data);
    out.push_back({e.name, e.dtype, e.shape, std::vector<unsigned char>(p, p + e.nbytes)});
  }
  return out;
}

void write_arrays(const std::string& path, const std::vector<TensorToWrite>& arrays) {
  if (ends_with(path, ".npz")) return write_npz(path, arrays);
  if (ends_with(path, ".safetensors")) return write_safetensors(path, arrays, {}, 1);
  throw WeightsError(fmt::format("{}: the name must end in .npz or .safetensors", path));
}

}  // namespace io
