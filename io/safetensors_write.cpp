// The safetensors writer: aligned layout, written atomically (io/atomic_file.h) so a
// crash never leaves a half-written weights file under the final name.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "io/atomic_file.h"
#include "io/safetensors.h"

namespace io {
namespace {

using Json = nlohmann::ordered_json;

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

void check_tensor(const std::string& path, const TensorToWrite& t) {
  auto fail = [&](const std::string& msg) { throw WeightsError(fmt::format("{}: tensor '{}': {}", path, t.name, msg)); };
  if (t.name == "__metadata__") fail("the name __metadata__ is reserved");
  size_t itemsize = dtype_size(t.dtype);
  if (itemsize == 0) fail(fmt::format("unknown dtype '{}'", t.dtype));
  size_t count = 1;
  bool overflow = false;
  for (int64_t d : t.shape) {
    if (d < 0) fail(fmt::format("negative dimension {}", d));
    auto v = static_cast<uint64_t>(d);
    if (v != 0 && count > std::numeric_limits<size_t>::max() / itemsize / v) overflow = true;
    else count *= static_cast<size_t>(v);
  }
  for (int64_t d : t.shape)
    if (d == 0) { count = 0; overflow = false; }
  if (overflow) fail("shape overflows");
  if (count * itemsize != t.nbytes)
    fail(fmt::format("nbytes is {} but {} with {} elements needs {}", t.nbytes, t.dtype, count, count * itemsize));
  if (t.nbytes > 0 && !t.data) fail("data is null");
}
}  // namespace

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata, size_t alignment) {
  if (alignment == 0) alignment = 1;
  std::set<std::string> names;
  for (const TensorToWrite& t : tensors) {
    check_tensor(path, t);
    if (!names.insert(t.name).second) throw WeightsError(fmt::format("{}: duplicate tensor name '{}'", path, t.name));
  }
  Json header = Json::object();
  if (!metadata.empty()) {
    Json m = Json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = m;
  }
  std::vector<size_t> begins;
  size_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    offset = align_up(offset, alignment);
    begins.push_back(offset);
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.nbytes}}};
    offset += t.nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception& e) {
    throw WeightsError(fmt::format("{}: cannot encode the header (names must be UTF-8): {}", path, e.what()));
  }
  // Spaces are JSON whitespace: readers ignore them, and the data section starts aligned.
  text.resize(align_up(8 + text.size(), std::max<size_t>(alignment, 8)) - 8, ' ');

  TempFile out(path);
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));
  out.write(len, 8);
  out.write(text.data(), text.size());
  static const char kZeros[64] = {};
  size_t pos = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (size_t pad = begins[i] - pos; pad > 0;) {
      size_t n = std::min(pad, sizeof kZeros);
      out.write(kZeros, n);
      pad -= n;
    }
    out.write(tensors[i].data, tensors[i].nbytes);
    pos = begins[i] + tensors[i].nbytes;
  }
  out.commit();
}

}  // namespace io
