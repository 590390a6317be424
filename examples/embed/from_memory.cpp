// A program whose text and weights are compiled into the app (docs/runtime.md,
// "Embedding on a device"): loaded from memory, and through a reader as an asset API
// would hand them out, with no file system.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "vm/vm.h"

// In a real app: the files of a program directory turned into arrays at build time
// (`xxd -i weights.safetensors`, C23 #embed, a linker script), or an asset's bytes.
static const char kProgram[] = R"(# tensorvm ir 1
def project(x: Tensor) -> Tensor:
    w = param("proj.weight")
    y = linear(x, w)
    return y
)";
// weights.safetensors: an 8-byte header length (72), the JSON header, then the data:
// proj.weight = [[1, 2], [3, 4]] as little-endian f32.
alignas(64) static const char kWeights[] =
    "\x48\x00\x00\x00\x00\x00\x00\x00"
    R"({"proj.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}     )"
    "\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40";
static const size_t kWeightsSize = sizeof kWeights - 1;  // without the literal's NUL

// An app's own source of bytes (an Android AAsset, a flash partition, a socket).
class AssetReader : public vm::WeightsReader {
 public:
  AssetReader(const char* bytes, size_t size) : bytes_(bytes), size_(size) {}
  uint64_t size() override { return size_; }
  size_t read(uint64_t offset, void* dst, size_t n) override {
    if (offset >= size_) return 0;
    n = std::min<size_t>(n, size_ - size_t(offset));
    std::memcpy(dst, bytes_ + offset, n);
    return n;
  }

 private:
  const char* bytes_;
  size_t size_;
};

static float run_project(const std::shared_ptr<const vm::Program>& program, float* second) {
  vm::Session session(program);
  vm::Tensor x = vm::Tensor::empty(vm::DType::f32, {1, 2});
  x.data<float>()[0] = 1.0f;
  x.data<float>()[1] = 1.0f;
  vm::Tensor y = vm::run(session, "project", {vm::Value(x)})[0].as_tensor();
  *second = y.data<float>()[1];
  return y.data<float>()[0];
}

int main() {
  // Borrowed: the weights stay in kWeights (static, so alive as long as the program).
  auto borrowed = vm::Program::from_memory(kProgram, kWeights, kWeightsSize);
  // Read through the app's reader into memory the Program owns.
  AssetReader reader(kWeights, kWeightsSize);
  auto read = vm::Program::from_reader(kProgram, reader);

  float a1, b1;
  const float a0 = run_project(borrowed, &a1), b0 = run_project(read, &b1);
  std::printf("%g %g / %g %g\n", a0, a1, b0, b1);  // 3 7 / 3 7

  try {  // a truncated buffer is an error, never a crash
    vm::Program::from_memory(kProgram, kWeights, kWeightsSize - 1);
    return 1;
  } catch (const vm::Error& e) {
    std::printf("%s\n", e.what());
  }
  return a0 == 3 && a1 == 7 && b0 == 3 && b1 == 7 ? 0 : 1;
}
