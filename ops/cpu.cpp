// CPU detection and the choice of kernel variant (ops/cpu.h). x86-64 reads cpuid and
// checks that the OS saves the vector registers (xgetbv), as a CPU may have AVX-512
// that the kernel does not enable; AArch64 always has NEON, and the kernel says in
// AT_HWCAP whether it has the dot-product instructions.
#include "ops/cpu.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "ops/gemm_library.h"
#include "ops/linear_kernels.h"
#include "ops/w8a8_amx.h"
#include "core/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace ops {

namespace {

struct Variant {
  const char* name;
  const kernels::KernelTable* table;
  std::vector<const char*> needs;  // cpu_info() features
};

const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
      // CMake defines TENSORVM_KERNELS_<variant> for each variant it builds: all of the
      // target's, or those TENSORVM_KERNEL_VARIANTS names (a device build).
      {"scalar", &kernels::kScalarKernels, {}},
#if defined(__x86_64__)
#ifdef TENSORVM_KERNELS_avx2
      {"avx2", &kernels::kAvx2Kernels, {"avx2", "fma", "f16c"}},
#endif
#ifdef TENSORVM_KERNELS_avx512
      {"avx512", &kernels::kAvx512Kernels, {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl"}},
#endif
#ifdef TENSORVM_KERNELS_avx512_vnni
      {"avx512_vnni", &kernels::kAvx512VnniKernels,
       {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512vnni"}},
#endif
#elif defined(__aarch64__)
#ifdef TENSORVM_KERNELS_neon
      {"neon", &kernels::kNeonKernels, {"neon"}},
#endif
#ifdef TENSORVM_KERNELS_neon_dotprod
      {"neon_dotprod", &kernels::kNeonDotprodKernels, {"neon", "dotprod"}},
#endif
#elif defined(__wasm__) && defined(TENSORVM_KERNELS_simd128)
      {"simd128", &kernels::kSimd128Kernels, {"simd128"}},
#endif
  };
  return v;
}

#if defined(__x86_64__)
CpuInfo detect() {
  CpuInfo info{"x86_64", "", {}};
  unsigned a = 0, b = 0, c = 0, d = 0;
  unsigned brand[12] = {};
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000004u) {
    for (unsigned i = 0; i < 3; ++i) __get_cpuid(0x80000002u + i, &brand[4 * i], &brand[4 * i + 1], &brand[4 * i + 2], &brand[4 * i + 3]);
    char text[49] = {};
    std::memcpy(text, brand, 48);
    info.model = text;
    while (!info.model.empty() && info.model.back() == ' ') info.model.pop_back();
    while (!info.model.empty() && info.model.front() == ' ') info.model.erase(0, 1);
  }
  auto add = [&](bool has, const char* name) {
    if (has) info.features.push_back(name);
  };
  if (!__get_cpuid(1, &a, &b, &c, &d)) return info;
  const unsigned ecx1 = c;
  add(ecx1 & (1u << 20), "sse4.2");
  add(ecx1 & (1u << 23), "popcnt");
  // The OS saves YMM state (XCR0 bits 1-2) and ZMM state (bits 5-7) on context switches.
  bool os_avx = false, os_avx512 = false;
  if ((ecx1 & (1u << 27)) && (ecx1 & (1u << 28))) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    os_avx = (lo & 0x6u) == 0x6u;
    os_avx512 = os_avx && (lo & 0xE0u) == 0xE0u;
  }
  add(os_avx, "avx");
  add(os_avx && (ecx1 & (1u << 12)), "fma");
  add(os_avx && (ecx1 & (1u << 29)), "f16c");
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    add(os_avx && (b & (1u << 5)), "avx2");
    add(os_avx512 && (b & (1u << 16)), "avx512f");
    add(os_avx512 && (b & (1u << 17)), "avx512dq");
    add(os_avx512 && (b & (1u << 30)), "avx512bw");
    add(os_avx512 && (b & (1u << 31)), "avx512vl");
    add(os_avx512 && (c & (1u << 11)), "avx512vnni");
    add(d & (1u << 24), "amx-tile");
    add(d & (1u << 25), "amx-int8");
    add(d & (1u << 22), "amx-bf16");
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    add(os_avx && (a1 & (1u << 4)), "avxvnni");
    add(os_avx512 && (a1 & (1u << 5)), "avx512bf16");
  }
  return info;
}
#elif defined(__aarch64__)
CpuInfo detect() {
  CpuInfo info{"aarch64", "", {"neon"}};
  if (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) info.features.push_back("dotprod");
  return info;
}
#elif defined(__wasm__)
// A module is validated whole before it runs, so a build holding the simd128 variant only
// loads in an engine with SIMD128: being here proves the feature (the page picks the .wasm).
CpuInfo detect() {
#ifdef TENSORVM_KERNELS_simd128
  return {"wasm32", "WebAssembly", {"simd128"}};
#else
  return {"wasm32", "WebAssembly", {}};
#endif
}
#else
CpuInfo detect() { return {"unknown", "", {}}; }
#endif


bool supported(const Variant& v) {
  for (const char* f : v.needs)
    if (!cpu_has(f)) return false;
  return true;
}

const Variant& pick(std::string_view name) {
  if (name.empty() || name == "auto") {
    const Variant* best = &variants().front();
    for (const auto& v : variants())
      if (supported(v)) best = &v;
    return *best;
  }
  for (const auto& v : variants()) {
    if (name != v.name) continue;
    if (!supported(v)) {
      std::string missing;
      for (const char* f : v.needs)
        if (!cpu_has(f)) missing += std::string(missing.empty() ? "" : ", ") + f;
      vm::fail("kernel variant '{}' needs {} that this CPU ({}) lacks", name, missing, cpu_info().model);
    }
    return v;
  }
  std::string known;
  for (const auto& v : variants()) known += std::string(known.empty() ? "" : ", ") + v.name;
  vm::fail("unknown kernel variant '{}' (built: {}, or auto)", name, known);
}

std::atomic<const kernels::KernelTable*> g_active{nullptr};
std::atomic<bool> g_forced{false};  // set_kernel_variant chose the active variant, not TENSORVM_ISA or auto

}  // namespace

const CpuInfo& cpu_info() {
  static const CpuInfo info = detect();
  return info;
}

std::vector<std::string> built_kernel_variants() {
  std::vector<std::string> out;
  for (const auto& v : variants()) out.emplace_back(v.name);
  return out;
}

std::vector<std::string> supported_kernel_variants() {
  std::vector<std::string> out;
  for (const auto& v : variants())
    if (supported(v)) out.emplace_back(v.name);
  return out;
}

const kernels::KernelTable& kernel_table() {
  const kernels::KernelTable* k = g_active.load(std::memory_order_acquire);
  if (k) return *k;
  const char* env = std::getenv("TENSORVM_ISA");
  try {
    k = pick(env ? env : "auto").table;
  } catch (const vm::Error& e) {
    vm::fail("TENSORVM_ISA={}: {}", env ? env : "", e.what());
  }
  g_active.store(k, std::memory_order_release);
  return *k;
}

void set_kernel_variant(std::string_view name) {
  g_active.store(pick(name).table, std::memory_order_release);
  g_forced.store(true, std::memory_order_relaxed);
}

bool cpu_has(std::string_view feature) {
  for (const auto& f : cpu_info().features)
    if (f == feature) return true;
  return false;
}

std::string describe_cpu() {
  const CpuInfo& info = cpu_info();
  std::string features, supported_list;
  for (const auto& f : info.features) features += (features.empty() ? "" : " ") + f;
  for (const auto& v : supported_kernel_variants()) supported_list += (supported_list.empty() ? "" : " ") + v;
  const auto& k = kernel_table();
  const char* env = std::getenv("TENSORVM_ISA");
  return fmt::format(
      "cpu: {}\narch: {}\nfeatures: {}\nvariants: {}\nactive: {}{}\nlinear: {}{}\nlinear_int8: {}\nlinear_w8a8: {} ({})\n",
      info.model.empty() ? "unknown" : info.model, info.arch, features, supported_list, k.name,
      g_forced.load(std::memory_order_relaxed) ? std::string(" (set_kernel_variant)")
      : env                                     ? fmt::format(" (TENSORVM_ISA={})", env)
                                                : std::string(" (auto)"), k.name,
      library_gemm_active() ? fmt::format(" ({} past {} rows)", library_gemm_name(), kMaxDotRows) : std::string(),
      k.name, k.name,
      amx_active() ? fmt::format("{}; amx from {} rows", k.w8a8_name, kAmxMinRows) : std::string(k.w8a8_name));
}

}  // namespace ops
