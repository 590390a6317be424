// What CPU this is and which instruction-set variant of the hot kernels runs on it.
// The variant is chosen once, on first use: the best one the CPU supports, or the one
// named by the environment variable TENSORVM_ISA (scalar, avx2, avx512, avx512_vnni on
// x86-64; scalar, neon on AArch64). set_kernel_variant() forces one (tests, benchmarks).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ops/kernels/kernels.h"

namespace ops {

struct CpuInfo {
  std::string arch;                   // "x86_64", "aarch64"
  std::string model;                  // the CPU's brand string where it has one
  std::vector<std::string> features;  // the features the variants look at, that this CPU has (and its OS enables)
};
const CpuInfo& cpu_info();

// Whether cpu_info() lists `feature` ("avx2", "amx-int8", ...).
bool cpu_has(std::string_view feature);

// The variants built for this target, and those this CPU can run (best last).
std::vector<std::string> built_kernel_variants();
std::vector<std::string> supported_kernel_variants();

// The active variant's kernels (chosen on first use; vm::Error if TENSORVM_ISA names a
// variant that is unknown or that this CPU cannot run).
const kernels::KernelTable& kernel_table();

// Forces a variant by name ("auto": the best supported one) for every Session of the
// process. vm::Error if unknown or unsupported. Not meant to be called while a kernel runs.
void set_kernel_variant(std::string_view name);

// One line per fact, for `tensorvm info`, tensorvm-run --info and benchmark results:
// cpu, arch, features, variants supported, the active variant per op.
std::string describe_cpu();

}  // namespace ops
