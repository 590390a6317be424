// Weight-only int8 linear. The weight is stored int8 [out, in] with one f32 scale per
// output channel (symmetric: w ~= q * scale[:, None]); built offline by
// pycompiler/quantize.py. A decode step (a few rows) is bound by reading the weight,
// so up to 8 rows stream int8 rows (4x fewer bytes than f32) and widen them to f32 in
// registers; more rows (beams x batch, the encoder) dequantize blocks of weight rows
// into a small f32 scratch and use linear's f32 kernels on each block. The kernels are
// ops/kernels/linear_i8.h, per instruction-set variant.
#include <algorithm>

#include "ops/cpu.h"
#include "ops/linear_kernels.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace ops {

namespace {

constexpr int64_t kMaxStreamRows = 8;  // rows up to this stream the int8 rows

// linear_int8(x, weight, scale, bias=None): x[..., in] @ (weight[out, in] * scale[out, None])^T + bias[out]
void linear_int8(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Tensor& w = a.tensor(1);
  const Tensor& sc = a.tensor(2);
  const Tensor* b = a.opt_tensor(3);
  if (x.dtype() != DType::f32) vm::fail("x must be f32, got {}", x.describe());
  if (x.ndim() < 1) vm::fail("x must have at least 1 dimension, got {}", x.describe());
  if (w.dtype() != DType::i8 || w.ndim() != 2) vm::fail("weight must be i8 [out, in], got {}", w.describe());
  const int64_t in = x.size(-1), outf = w.size(0);
  if (w.size(1) != in) vm::fail("x has {} features but weight is {}", in, w.describe());
  if (sc.dtype() != DType::f32 || sc.ndim() != 1 || sc.size(0) != outf)
    vm::fail("scale must be f32[{}], got {}", outf, sc.describe());
  int64_t rows;
  Tensor y = linear_output(ctx, x, outf, b, rows);
  if (rows == 0 || outf == 0) {
    out[0] = std::move(y);
    return;
  }
  const float* bp = b ? b->data<float>() : nullptr;
  const float* sp = sc.data<float>();
  const int8_t* qp = w.data<int8_t>();
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const kernels::KernelTable& k = kernel_table();
  if (in == 0) {  // empty sums
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < outf; ++j) yp[r * outf + j] = bp ? bp[j] : 0.0f;
  } else if (rows <= kMaxStreamRows) {
    const int64_t grain = std::max<int64_t>(16, (int64_t(1) << 16) / (rows * in));
    ctx.parallel_for(outf, grain, [&](int64_t j0, int64_t j1) { k.dot_rows_i8(xp, rows, in, qp, sp, bp, yp, outf, j0, j1); });
  } else {
    // Blocks of weight rows dequantized into f32, multiplied with linear's f32 kernels.
    linear_converted_blocks(ctx, xp, rows, in, outf, bp, yp,
                            [&](int64_t j0, int64_t n, float* s) { k.dequantize_rows(qp + j0 * in, sp + j0, n, in, s); });
  }
  out[0] = std::move(y);
}

template <typename I>
void embedding_int8_rows(const I* ids, int64_t n, const int8_t* w, const float* sc, int64_t v, int64_t d, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = int64_t(ids[i]);
    if (id < 0 || id >= v) vm::fail("id {} out of range [0, {})", id, v);
    const int8_t* row = w + id * d;
    const float s = sc[id];
    float* dst = y + i * d;
    for (int64_t j = 0; j < d; ++j) dst[j] = float(row[j]) * s;
  }
}

// embedding_int8(ids, weight, scale): weight[ids] * scale[ids, None]. A plain gather: a
// step embeds a few tokens, so no kernel variant pays off; it lets a tied
// embedding/output matrix be stored once, as linear_int8's int8 rows and scales.
void embedding_int8(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& ids = a.tensor(0);
  const Tensor& w = a.tensor(1);
  const Tensor& sc = a.tensor(2);
  if (ids.dtype() != DType::i64 && ids.dtype() != DType::i32) vm::fail("ids must be i64 or i32, got {}", ids.describe());
  if (w.dtype() != DType::i8 || w.ndim() != 2) vm::fail("weight must be i8 [V, D], got {}", w.describe());
  const int64_t v = w.size(0), d = w.size(1);
  if (sc.dtype() != DType::f32 || sc.ndim() != 1 || sc.size(0) != v)
    vm::fail("scale must be f32[{}], got {}", v, sc.describe());
  Shape os = ids.shape();
  os.push_back(d);
  Tensor y = ctx.empty(DType::f32, os);
  if (ids.dtype() == DType::i64)
    embedding_int8_rows(ids.data<int64_t>(), ids.numel(), w.data<int8_t>(), sc.data<float>(), v, d, y.data<float>());
  else
    embedding_int8_rows(ids.data<int32_t>(), ids.numel(), w.data<int8_t>(), sc.data<float>(), v, d, y.data<float>());
  out[0] = std::move(y);
}

}  // namespace

void register_quantized_ops(Registry& r) {
  r.add(TENSORVM_OP("linear_int8", linear_int8), "linear algebra",
        {p_tensor("x"), p_tensor("weight"), p_tensor("scale"), p_opt_tensor("bias")}, {"Tensor"},
        "x[..., in] (f32) @ (weight[out, in] (i8) * scale[out, None] (f32))^T + bias[out]: a weight-only int8 "
        "linear with symmetric per-output-channel scales (built offline by pycompiler/quantize.py quantize_int8).");
  r.add(TENSORVM_OP("embedding_int8", embedding_int8), "nn", {p_tensor("ids"), p_tensor("weight"), p_tensor("scale")},
        {"Tensor"},
        "Rows of the int8 table weight[V, D] (i8) picked by ids (i64 or i32, any shape), times their scale[V] (f32) "
        "-> f32[*ids.shape, D]: embedding's lookup in a table stored as linear_int8's weight and scale (a tied "
        "embedding/output matrix stored once). An id outside [0, V) is an error.");
}

}  // namespace ops
