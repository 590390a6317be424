// libFuzzer target: a program loaded from memory (vm::Program::from_memory, what
// tensorvm.load_bytes calls) with its bundled checks (`tensorvm bundle`, rerun by
// `tensorvm-run PROGRAM verify`: cli::verify_bundle). The input is five parts cut at
// kSeparator: program text, meta.json, bundle.json, the arrays file every case names
// (.safetensors or .npz) and weights.safetensors; a missing part is empty (no meta, no
// weights). Inputs of odd size copy the weights (LoadOptions::copy_weights), even ones
// borrow them in place. Loading and verifying must end in a verdict, a vm::Error or an
// io::WeightsError, never a crash; the runs are under the limits of fuzz_limits.h.
// FUZZ_VERBOSE=1 prints why an input stopped and verify's lines.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_limits.h"
#include "fuzz_memfile.h"
#include "fuzz_verbose.h"
#include "io/array_file.h"
#include "io/safetensors.h"
#include "cli/verify.h"

namespace {

constexpr std::string_view kSeparator = "\n--8<--\n";
constexpr size_t kParts = 5;
constexpr size_t kMaxInput = 1 << 16;

std::vector<std::string_view> split(std::string_view in) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < kParts) {
    const size_t at = in.find(kSeparator);
    if (at == std::string_view::npos) break;
    parts.push_back(in.substr(0, at));
    in.remove_prefix(at + kSeparator.size());
  }
  parts.push_back(in);
  parts.resize(kParts);
  return parts;
}

}  // namespace

// verify prints a line per output to stdout: silenced unless FUZZ_VERBOSE.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (!fuzz::verbose()) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDOUT_FILENO), close(null);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return 0;
  const auto parts = split(std::string_view(reinterpret_cast<const char*>(data), size));
  const std::string_view text = parts[0], meta = parts[1], manifest = parts[2], arrays = parts[3], weights = parts[4];
  std::shared_ptr<const vm::Program> program;
  try {
    vm::LoadOptions options;
    options.copy_weights = size % 2 == 1;
    program = vm::Program::from_memory(text, weights.empty() ? nullptr : weights.data(), weights.size(), meta, options);
  } catch (const vm::Error& e) {
    fuzz::stopped("load", e);
    return 0;
  }
  const cli::BundleArrays read_arrays = [arrays](const std::string&) {
    fuzz::MemFile file(reinterpret_cast<const uint8_t*>(arrays.data()), arrays.size());
    return io::read_arrays(file.path());
  };
  fuzz::Limits limits;
  try {
    const int rc = cli::verify_bundle(std::string(manifest), "bundle.json", read_arrays, program, {}, &limits);
    if (fuzz::verbose()) std::fprintf(stderr, "verify: %s\n", rc == 0 ? "passed" : "failed");
  } catch (const vm::Error& e) {
    fuzz::stopped("verify", e);
  } catch (const io::WeightsError& e) {
    fuzz::stopped("verify (arrays)", e);
  } catch (const fuzz::HarnessLimit& e) {
    fuzz::stopped("verify (harness limit)", e);
  }
  return 0;
}
