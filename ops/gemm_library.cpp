#include "ops/gemm_library.h"

#include <atomic>
#include <cstdlib>

#include <fmt/format.h>

#include "ops/cpu.h"
#include "core/error.h"

#if TENSORVM_HAVE_ONEDNN
#include <dnnl.h>
// libgomp's, declared here: clang's include path may have no omp.h.
extern "C" void omp_set_num_threads(int);
#endif

namespace ops {

namespace {

enum class Backend { automatic, own, onednn };

Backend parse(std::string_view name) {
  if (name == "auto") return Backend::automatic;
  if (name == "own") return Backend::own;
  if (name == "onednn") {
#if TENSORVM_HAVE_ONEDNN
    return Backend::onednn;
#else
    vm::fail("this build of tensorvm has no oneDNN (libdnnl-dev was not found when it was built)");
#endif
  }
  vm::fail("unknown GEMM backend '{}' (auto, own or onednn)", name);
}

Backend from_env() {
  const char* env = std::getenv("TENSORVM_GEMM");
  if (!env) return Backend::automatic;
  try {
    return parse(env);
  } catch (const vm::Error& e) {
    vm::fail("TENSORVM_GEMM={}: {}", env, e.what());
  }
}

std::atomic<int> g_backend{-1};  // a Backend once read from TENSORVM_GEMM or set

[[maybe_unused]] Backend backend() {  // unused without oneDNN
  int b = g_backend.load(std::memory_order_acquire);
  if (b < 0) {
    b = int(from_env());
    g_backend.store(b, std::memory_order_release);
  }
  return Backend(b);
}

}  // namespace

bool library_gemm_active() {
#if TENSORVM_HAVE_ONEDNN
  switch (backend()) {
    case Backend::own: return false;
    case Backend::onednn: return true;
    case Backend::automatic: {
      static const std::string best = supported_kernel_variants().back();
      return kernel_table().name == best;
    }
  }
#endif
  return false;
}

void library_gemm_columns(const float* x, int64_t rows, int64_t in, const float* w, const float* bias, float* y,
                          int64_t outf, int64_t j0, int64_t j1) {
#if TENSORVM_HAVE_ONEDNN
  // oneDNN (Debian's build) threads with OpenMP, whose thread count is per calling
  // thread: one thread here, as the caller already splits the work over its pool.
  omp_set_num_threads(1);
  const dnnl_status_t st = dnnl_sgemm('N', 'T', rows, j1 - j0, in, 1.0f, x, in, w + j0 * in, in, 0.0f, y + j0, outf);
  if (st != dnnl_success) vm::fail("oneDNN sgemm failed (status {}) on [{}, {}] x [{}, {}]^T", int(st), rows, in, j1 - j0, in);
  if (bias)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = j0; j < j1; ++j) y[r * outf + j] += bias[j];
#else
  (void)x, (void)rows, (void)in, (void)w, (void)bias, (void)y, (void)outf, (void)j0, (void)j1;
  vm::fail("library_gemm_columns: this build has no library GEMM");
#endif
}

std::string library_gemm_name() {
#if TENSORVM_HAVE_ONEDNN
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("onednn {}.{}.{}", v->major, v->minor, v->patch);
#else
  return "";
#endif
}

void set_gemm_backend(std::string_view name) { g_backend.store(int(parse(name)), std::memory_order_release); }

}  // namespace ops
