// libFuzzer target: bytes as a safetensors file through ir::WeightsFile::open.
// Any input must end in a WeightsFile or an ir::WeightsError. Every entry the reader
// hands out is read end to end, so a pointer or size outside the mapping faults here.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz_memfile.h"
#include "ir/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::MemFile file(data, size);
  std::shared_ptr<ir::WeightsFile> wf;
  try {
    wf = ir::WeightsFile::open(file.path());
  } catch (const ir::WeightsError&) {
    return 0;
  }
  unsigned sum = 0;
  for (const ir::TensorEntry& t : wf->entries()) {
    size_t count = 1;
    for (int64_t d : t.shape) count *= static_cast<size_t>(d);
    if (count * ir::dtype_size(t.dtype) != t.nbytes) {
      std::fprintf(stderr, "tensor '%s': nbytes %zu does not match its dtype and shape\n", t.name.c_str(), t.nbytes);
      std::abort();
    }
    if (wf->find(t.name) != &t) {
      std::fprintf(stderr, "tensor '%s' is not found under its own name\n", t.name.c_str());
      std::abort();
    }
    const auto* p = static_cast<const unsigned char*>(t.data);
    for (size_t i = 0; i < t.nbytes; ++i) sum += p[i];
  }
  // Keeps the reads from being optimised away.
  volatile unsigned sink = sum;
  (void)sink;
  return 0;
}
