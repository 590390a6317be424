// Matrix products; weights stay in their stored [out, in] layout. linear's kernels are
// ops/kernels/ (one variant per instruction set, ops/cpu.h picks one): up to 32 rows of
// x (decode: batch x beams) stream each weight row once and dot it with every row; more
// rows (encoder, prefill) take a register-tiled GEMM. matmul is Eigen's.
#include <algorithm>
#include <string>

#include <Eigen/Core>

#include "ops/cpu.h"
#include "ops/elementwise_math.h"
#include "ops/gemm_library.h"
#include "ops/linear_kernels.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace ops {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;
using RowMap = Eigen::Map<RowMatrix>;

Tensor linear_output(OpContext& ctx, const Tensor& x, int64_t outf, const Tensor* bias, int64_t& rows) {
  if (bias && (bias->dtype() != DType::f32 || bias->ndim() != 1 || bias->size(0) != outf))
    vm::fail("bias must be f32[{}], got {}", outf, bias->describe());
  Shape os = x.shape();
  os[os.size() - 1] = outf;
  rows = Shape(x.shape().begin(), x.shape().end() - 1).numel();
  return ctx.empty(DType::f32, os);
}

bool library_gemm_for(int64_t rows, int64_t in, int64_t outf) {
  constexpr int64_t kLibraryMinRows = 17, kLibraryMinWeights = int64_t(1) << 22;
  return library_gemm_active() &&
         (rows > kMaxDotRows || (rows >= kLibraryMinRows && in * outf >= kLibraryMinWeights));
}

// act over columns [j0, j1) of every row of y [rows, outf], in place. sigmoid and silu are
// the active variant's vector loops (the ops' own: ops/kernels/softmax.h), which read
// each lane before writing it.
void apply_epilogue(Epilogue act, float* y, int64_t rows, int64_t outf, int64_t j0, int64_t j1) {
  if (act == Epilogue::none) return;
  const kernels::KernelTable& k = kernel_table();
  for (int64_t r = 0; r < rows; ++r) {
    float* p = y + r * outf + j0;
    const int64_t n = j1 - j0;
    switch (act) {
      case Epilogue::relu:  // as the relu op: NaN stays NaN, -0.0 becomes 0
        for (int64_t i = 0; i < n; ++i) p[i] = p[i] <= 0 ? 0.0f : p[i];
        break;
      case Epilogue::sigmoid: k.exp_map(int(ExpMap::sigmoid), p, p, n); break;
      case Epilogue::silu: k.exp_map(int(ExpMap::silu), p, p, n); break;
      case Epilogue::gelu: k.exp_map(int(ExpMap::gelu), p, p, n); break;  // exact gelu, as gelu(x, "none")
      case Epilogue::none: break;
    }
  }
}

void linear_f32(OpContext& ctx, const float* x, int64_t rows, int64_t in, const float* w, const float* bias,
                int64_t outf, float* y, Epilogue act) {
  if (rows <= 0 || outf <= 0) return;
  const kernels::KernelTable& k = kernel_table();
  if (in == 0) {  // empty sums
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < outf; ++j) y[r * outf + j] = bias ? bias[j] : 0.0f;
    apply_epilogue(act, y, rows, outf, 0, outf);
  } else if (library_gemm_for(rows, in, outf)) {
    // Many rows (or a big weight, see library_gemm_for), through oneDNN: fixed column
    // chunks, so every call has the same shape whatever the thread count.
    const int64_t nc = kLibraryGemmColumns, chunks = (outf + nc - 1) / nc;
    ctx.parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        library_gemm_columns(x, rows, in, w, bias, y, outf, c * nc, std::min((c + 1) * nc, outf));
        apply_epilogue(act, y, rows, outf, c * nc, std::min((c + 1) * nc, outf));
      }
    });
  } else if (rows <= kMaxDotRows) {
    // A few rows: the output features split over threads, each reading its own slice of
    // the weights, which is what bounds a decode step (batch 1 reads every weight once).
    const int64_t grain = rows <= 8 ? std::max<int64_t>(16, (int64_t(1) << 16) / (rows * in)) : 16;
    ctx.parallel_for(outf, grain, [&](int64_t j0, int64_t j1) {
      k.dot_rows_f32(x, rows, in, w + j0 * in, bias ? bias + j0 : nullptr, j1 - j0, y + j0, outf);
      apply_epilogue(act, y, rows, outf, j0, j1);
    });
  } else {
    // Many rows: the tiled GEMM over blocks of output features, each thread with its own
    // pack buffer.
    const int64_t nb = k.gemm_block, blocks = (outf + nb - 1) / nb;
    ctx.parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
      Tensor pack = ctx.empty(DType::f32, Shape{k.gemm_pack_floats});
      k.gemm_rows_f32(x, rows, in, w, bias, y, outf, b0 * nb, std::min(b1 * nb, outf), pack.data<float>());
      apply_epilogue(act, y, rows, outf, b0 * nb, std::min(b1 * nb, outf));
    });
  }
}

// linear(x, weight, bias=None): x[..., in] @ weight[out, in]^T + bias[out]; linear_act
// adds an activation (argument 3) applied as each slice of the output is made.
template <bool ACT>
static void linear(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Tensor& w = a.tensor(1);
  const Tensor* b = a.opt_tensor(2);
  Epilogue act = Epilogue::none;
  if constexpr (ACT) {
    const std::string& name = a.str(3);
    if (name == "relu") act = Epilogue::relu;
    else if (name == "sigmoid") act = Epilogue::sigmoid;
    else if (name == "silu") act = Epilogue::silu;
    else if (name == "gelu") act = Epilogue::gelu;
    else vm::fail("activation must be \"relu\", \"sigmoid\", \"silu\" or \"gelu\", got \"{}\"", name);
  }
  if (x.dtype() != DType::f32) vm::fail("x must be f32, got {}", x.describe());
  if (w.dtype() != DType::f32 && w.dtype() != DType::f16 && w.dtype() != DType::bf16)
    vm::fail("weight must be f32, f16 or bf16, got {}", w.describe());
  if (x.ndim() < 1) vm::fail("x must have at least 1 dimension, got {}", x.describe());
  if (w.ndim() != 2) vm::fail("weight must be 2-D [out, in], got {}", w.describe());
  const int64_t in = x.size(-1), outf = w.size(0);
  if (w.size(1) != in) vm::fail("x has {} features but weight is {}", in, w.describe());
  int64_t rows;
  Tensor y = linear_output(ctx, x, outf, b, rows);
  const float* bp = b ? b->data<float>() : nullptr;
  if (w.dtype() == DType::f32)
    linear_f32(ctx, x.data<float>(), rows, in, w.data<float>(), bp, outf, y.data<float>(), act);
  else
    linear_16bit(ctx, x.data<float>(), rows, in, static_cast<const uint16_t*>(w.raw()), w.dtype(), bp, outf,
                 y.data<float>(), act);
  out[0] = std::move(y);
}

// The numpy-broadcast shape of two batch shapes (right-aligned; size 1 stretches).
static Shape broadcast_batch(const Shape& a, const Shape& b, const Tensor& x, const Tensor& y) {
  const int n = std::max(a.size(), b.size());
  Shape s;
  s.resize(n);
  for (int i = 0; i < n; ++i) {
    const int ia = i - (n - a.size()), ib = i - (n - b.size());
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      vm::fail("batch dimensions of x and y do not broadcast, got {} and {}", x.describe(), y.describe());
    s[i] = da == 1 ? db : da;
  }
  return s;
}

// Per-dimension strides (in matrices) of a batch shape right-aligned into `full`;
// broadcast dimensions get stride 0.
static Shape batch_strides(const Shape& batch, const Shape& full) {
  Shape st;
  st.resize(full.size());
  int64_t acc = 1;
  for (int i = full.size() - 1; i >= 0; --i) {
    const int j = i - (full.size() - batch.size());
    const int64_t d = j >= 0 ? batch[j] : 1;
    st[i] = d == 1 ? 0 : acc;
    acc *= d;
  }
  return st;
}

// matmul(x, y): x[..., m, k] @ y[..., k, n] with numpy broadcasting of the batch dims.
static void matmul(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Tensor& y = a.tensor(1);
  if (x.dtype() != DType::f32 || y.dtype() != DType::f32) vm::fail("x and y must be f32, got {} and {}", x.describe(), y.describe());
  if (x.ndim() < 2 || y.ndim() < 2) vm::fail("x and y must have at least 2 dimensions, got {} and {}", x.describe(), y.describe());
  const int64_t m = x.size(-2), k = x.size(-1), n = y.size(-1);
  if (y.size(-2) != k) vm::fail("x[..., m, k] and y[..., k, n] do not match, got {} and {}", x.describe(), y.describe());
  const Shape xb(x.shape().begin(), x.shape().end() - 2), yb(y.shape().begin(), y.shape().end() - 2);
  const Shape ob = broadcast_batch(xb, yb, x, y);
  Shape os = ob;
  os.push_back(m);
  os.push_back(n);
  Tensor z = ctx.empty(DType::f32, os);
  const int64_t batches = ob.numel();
  if (z.numel() == 0) {
    out[0] = std::move(z);
    return;
  }
  float* zp = z.data<float>();
  if (k == 0) {
    std::fill(zp, zp + z.numel(), 0.0f);  // empty sums
    out[0] = std::move(z);
    return;
  }
  const float* xp = x.data<float>();
  const float* yp = y.data<float>();
  if (yb.numel() == 1 && xb.numel() == batches) {
    // y is one matrix shared by every batch: a single GEMM over all rows of x.
    RowMap(zp, batches * m, n).noalias() = ConstRowMap(xp, batches * m, k) * ConstRowMap(yp, k, n);
    out[0] = std::move(z);
    return;
  }
  const Shape xs = batch_strides(xb, ob), ys = batch_strides(yb, ob);
  const int nb = ob.size();
  Shape idx;
  idx.resize(nb);
  int64_t xo = 0, yo = 0;  // offsets in matrices
  for (int64_t bi = 0; bi < batches; ++bi) {
    RowMap(zp + bi * m * n, m, n).noalias() = ConstRowMap(xp + xo * m * k, m, k) * ConstRowMap(yp + yo * k * n, k, n);
    for (int d = nb - 1; d >= 0; --d) {
      xo += xs[d];
      yo += ys[d];
      if (++idx[d] < ob[d]) break;
      xo -= xs[d] * ob[d];
      yo -= ys[d] * ob[d];
      idx[d] = 0;
    }
  }
  out[0] = std::move(z);
}

void register_linalg_ops(Registry& r) {
  r.add(TENSORVM_OP("linear", linear<false>), "linear algebra",
        {p_tensor("x"), p_tensor("weight"), p_opt_tensor("bias")},
        {"Tensor"},
        "x[..., in] @ weight[out, in]^T + bias[out]; x, bias and the result f32, the weight f32, f16 or bf16 (a "
        "16-bit weight is widened to f32 inside the kernel, exactly: the result is linear's on the widened weight, "
        "reading half the bytes). Weights keep the PyTorch [out, in] layout.");

  Param bias = p_opt_tensor("bias");
  bias.has_default = false;  // the activation after it has none
  r.add(TENSORVM_OP("linear_act", linear<true>), "linear algebra",
        {p_tensor("x"), p_tensor("weight"), bias, p_str("activation")},
        {"Tensor"},
        "activation(linear(x, weight, bias)) with activation \"relu\", \"sigmoid\", \"silu\" or \"gelu\" "
        "(the ops of those names; gelu is exact, approximate=\"none\"), applied to each slice of the output as it is computed (the graph passes fuse the two).");

  r.add(TENSORVM_OP("matmul", matmul), "linear algebra", {p_tensor("x"), p_tensor("y")}, {"Tensor"},
        "x[..., m, k] @ y[..., k, n] (f32, both at least 2-D); the batch dims broadcast like numpy.");
}

}  // namespace ops
