// linear's many-row GEMM through a well-kept library when the build has one (oneDNN's
// sgemm, Debian's libdnnl-dev): measured on the opus-mt encoder shapes it is up to 1.45x
// our tiled GEMM at 1024 rows (Xeon, AVX-512, one thread; bench/results/
// 2026-11-23-gemm-libraries.md). It runs only with the CPU's best kernel variant: a
// variant forced with TENSORVM_ISA or set_kernel_variant keeps our own kernels, so that
// forcing one measures and tests them. TENSORVM_GEMM=own|onednn|auto (default auto)
// chooses explicitly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ops {

// Whether linear's GEMM branch uses the library now.
bool library_gemm_active();

// y[r, j] = dot(x[r], w[j]) + bias[j] for every row and j in [j0, j1), single-threaded.
// Callers split the columns in multiples of kLibraryGemmColumns, so that every call has
// the same shape whatever the thread count (and so the same rounding).
constexpr int64_t kLibraryGemmColumns = 256;
void library_gemm_columns(const float* x, int64_t rows, int64_t in, const float* w, const float* bias, float* y,
                          int64_t outf, int64_t j0, int64_t j1);

// "onednn 2.6.3", or "" when the build has no library GEMM.
std::string library_gemm_name();

// "auto", "own" or "onednn" (tests, benchmarks); vm::Error when unknown or not built.
void set_gemm_backend(std::string_view name);

}  // namespace ops
