// linear with an f16 or bf16 weight (x, bias and y f32): the weight is widened to f32
// inside the kernels, which is exact, and multiplied with the f32 kernels' arithmetic,
// so the result equals linear on the widened weight bit for bit, per variant and for
// any thread count. The branches are linear_f32's (ops/linalg.cpp), taken on the same
// conditions: up to kMaxDotRows rows stream the 16-bit rows (dot_rows_f16/bf16: half
// the bytes of f32, which is what bounds a decode step); the library GEMM and the
// tiled GEMM get blocks of weight rows widened to f32 (linear_converted_blocks).
#include <algorithm>

#include "ops/cpu.h"
#include "ops/linear_kernels.h"

namespace ops {

void linear_16bit(OpContext& ctx, const float* x, int64_t rows, int64_t in, const uint16_t* w, DType wdt,
                  const float* bias, int64_t outf, float* y, Epilogue act) {
  if (rows <= 0 || outf <= 0) return;
  const kernels::KernelTable& k = kernel_table();
  const bool f16 = wdt == DType::f16;
  if (in == 0) {
    linear_f32(ctx, x, rows, in, nullptr, bias, outf, y, act);  // empty sums: the bias
  } else if (rows <= kMaxDotRows && !library_gemm_for(rows, in, outf)) {
    const auto dot = f16 ? k.dot_rows_f16 : k.dot_rows_bf16;
    const int64_t grain = rows <= 8 ? std::max<int64_t>(16, (int64_t(1) << 16) / (rows * in)) : 16;
    ctx.parallel_for(outf, grain, [&](int64_t j0, int64_t j1) {
      dot(x, rows, in, w + j0 * in, bias ? bias + j0 : nullptr, j1 - j0, y + j0, outf);
      apply_epilogue(act, y, rows, outf, j0, j1);
    });
  } else {
    const auto widen = f16 ? k.widen_f16 : k.widen_bf16;
    linear_converted_blocks(ctx, x, rows, in, outf, bias, y,
                            [&](int64_t j0, int64_t n, float* s) { widen(w + j0 * in, n * in, s); }, act);
  }
}

}  // namespace ops
