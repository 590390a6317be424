// libFuzzer target: bytes as a safetensors file through io::WeightsFile::open, and the
// same bytes through WeightsFile::from_memory (borrowed: libFuzzer's exactly sized copy,
// so ASan sees any read past the end). Any input must end in a WeightsFile or an
// io::WeightsError, the same for both. Every entry the reader hands out is read end to
// end, so a pointer or size outside the mapping faults here.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz_memfile.h"
#include "io/safetensors.h"

static std::shared_ptr<io::WeightsFile> load(const uint8_t* data, size_t size, bool from_memory) {
  try {
    if (from_memory) return io::WeightsFile::from_memory(data, size, "fuzz", /*copy=*/false);
    fuzz::MemFile file(data, size);
    return io::WeightsFile::open(file.path());
  } catch (const io::WeightsError&) {
    return nullptr;
  }
}

static void read_all(const std::shared_ptr<io::WeightsFile>& wf);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto from_file = load(data, size, false);
  auto from_memory = load(data, size, true);
  if (bool(from_file) != bool(from_memory) || (from_file && from_file->size() != from_memory->size())) {
    std::fprintf(stderr, "open and from_memory disagree on these bytes\n");
    std::abort();
  }
  if (from_file) read_all(from_file);
  if (from_memory) read_all(from_memory);
  return 0;
}

static void read_all(const std::shared_ptr<io::WeightsFile>& wf) {
  unsigned sum = 0;
  for (const io::TensorEntry& t : wf->entries()) {
    size_t count = 1;
    for (int64_t d : t.shape) count *= static_cast<size_t>(d);
    if (count * io::dtype_size(t.dtype) != t.nbytes) {
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
}
