// How a safetensors entry becomes a Value (vm/weights.h).
#include "vm/weights.h"

#include <cstring>

namespace vm {

namespace {

Value read_weight(const io::TensorEntry& e, const std::shared_ptr<io::WeightsFile>& file) {
  Shape shape(e.shape.begin(), e.shape.end());
  auto wrap = [&](DType dt) {
    const size_t es = dtype_size(dt);
    if (reinterpret_cast<uintptr_t>(e.data) % es == 0)
      return Tensor::external(const_cast<void*>(e.data), dt, shape, std::shared_ptr<void>(file, nullptr));
    Tensor t = Tensor::empty(dt, shape);
    std::memcpy(t.raw(), e.data, e.nbytes);
    return t;
  };
  if (e.dtype == "F32") return wrap(DType::f32);
  if (e.dtype == "I64") return wrap(DType::i64);
  if (e.dtype == "I32") return wrap(DType::i32);
  if (e.dtype == "BOOL") return wrap(DType::boolean);
  if (e.dtype == "I8") return wrap(DType::i8);
  if (e.dtype == "F16") return wrap(DType::f16);
  if (e.dtype == "BF16") return wrap(DType::bf16);
  fail("weight '{}' has dtype {}, which tensorvm does not load", e.name, e.dtype);
}

}  // namespace

Value weight_tensor(const io::TensorEntry& e, const std::shared_ptr<io::WeightsFile>& file) {
  Value v = read_weight(e, file);
  v.as_tensor().buffer()->mark_weight();
  return v;
}

std::vector<std::pair<size_t, const io::TensorEntry*>> indexed_weights(const io::WeightsFile& file,
                                                                       const std::string& name_template) {
  std::vector<std::pair<size_t, const io::TensorEntry*>> out;
  const auto hole = name_template.find("{}");
  if (hole == std::string::npos) return out;
  const std::string prefix = name_template.substr(0, hole), suffix = name_template.substr(hole + 2);
  for (const auto& e : file.entries()) {
    if (e.name.size() <= prefix.size() + suffix.size() || e.name.compare(0, prefix.size(), prefix) != 0 ||
        e.name.compare(e.name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string mid = e.name.substr(prefix.size(), e.name.size() - prefix.size() - suffix.size());
    if (mid.empty() || mid.size() > 6 || mid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (mid.size() > 1 && mid[0] == '0') continue;
    out.emplace_back(std::stoul(mid), &e);
  }
  return out;
}

}  // namespace vm
