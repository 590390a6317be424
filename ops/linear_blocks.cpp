// The many-rows branch of the linears whose weight is stored in another format than
// f32 (linear_int8, linear with an f16/bf16 weight): blocks of weight rows are turned
// into f32 in a per-thread scratch and multiplied with linear's f32 kernels. Each
// output's arithmetic is then linear_f32's on the converted weight, wherever a block or
// a thread's range starts.
#include <algorithm>

#include "ops/cpu.h"
#include "ops/gemm_library.h"
#include "ops/linear_kernels.h"

namespace ops {

namespace {
constexpr int64_t kBlockRows = 64;  // weight rows converted per block (a multiple of every gemm_block)
}  // namespace

void linear_converted_blocks(OpContext& ctx, const float* x, int64_t rows, int64_t in, int64_t outf, const float* bias,
                             float* y, const ConvertRows& convert, Epilogue act) {
  const kernels::KernelTable& k = kernel_table();
  if (library_gemm_for(rows, in, outf)) {
    // As linear's library branch: the library's GEMM on fixed blocks of columns (the
    // same shapes whatever the thread count).
    const int64_t nc = kLibraryGemmColumns, nblocks = (outf + nc - 1) / nc;
    ctx.parallel_for(nblocks, 1, [&](int64_t b0, int64_t b1) {
      Tensor scratch = ctx.empty(DType::f32, Shape{nc, in});
      float* s = scratch.data<float>();
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t j0 = blk * nc, n = std::min(nc, outf - j0);
        convert(j0, n, s);
        library_gemm_columns(x, rows, in, s, bias ? bias + j0 : nullptr, y + j0, outf, 0, n);
        apply_epilogue(act, y, rows, outf, j0, j0 + n);
      }
    });
    return;
  }
  const int64_t nblocks = (outf + kBlockRows - 1) / kBlockRows;
  ctx.parallel_for(nblocks, 1, [&](int64_t b0, int64_t b1) {
    Tensor scratch = ctx.empty(DType::f32, Shape{kBlockRows, in});
    Tensor pack = ctx.empty(DType::f32, Shape{k.gemm_pack_floats});
    float* s = scratch.data<float>();
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t j0 = blk * kBlockRows, n = std::min(kBlockRows, outf - j0);
      convert(j0, n, s);
      if (rows <= kMaxDotRows) {
        k.dot_rows_f32(x, rows, in, s, bias ? bias + j0 : nullptr, n, y + j0, outf);
      } else {
        k.gemm_rows_f32(x, rows, in, s, bias ? bias + j0 : nullptr, y + j0, outf, 0, n, pack.data<float>());
      }
      apply_epilogue(act, y, rows, outf, j0, j0 + n);
    }
  });
}

}  // namespace ops
