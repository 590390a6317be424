// 4-bit weights: linear_int4 (weight-only), linear_w4a8 (int8 activations, integer dot
// products) and embedding_int4, over one format built offline by pycompiler/quantize.py
// quantize_int4 (llama.cpp q4_0's rule and nibble order):
//   weight i8 [out, in_p / 2]: each block of 32 consecutive inputs k0 .. k0 + 31 of a row
//     is 16 bytes, byte i = (q[k0 + i] + 8) | ((q[k0 + 16 + i] + 8) << 4), q in [-8, 7];
//   scale f32 or f16 [out, in_p / G]: one per group of G inputs (G a multiple of 32;
//     f16 as llama.cpp's q4_0 stores it, widened to f32 for the rows a thread is about to
//     read, so the kernels see f32 scales only);
//   in_p = ceil(in / G) * G, the padding zero. G is not stored: it is 2 * weight.size(1) /
//   scale.size(1).
// A decode step (a few rows) is bound by reading the weight: 0.5 bytes a weight plus a
// scale per group, 8x fewer than f32. The kernels are ops/kernels/linear_i4.h, per
// instruction-set variant; the work is split over threads along the outputs only, and
// each output's arithmetic is the same wherever a split falls.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/cpu.h"
#include "ops/gemm_library.h"
#include "ops/linear_kernels.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace ops {

namespace {

constexpr int64_t kBlock = 32;         // inputs per nibble block (and per x block in w4a8)
constexpr int64_t kMaxStreamRows = 8;  // rows up to this stream the nibble rows
constexpr int64_t kBlockRows = 64;     // weight rows dequantized per block past that

struct Format {
  int64_t outf, in_p, group;
};

// The scale tensor, f32 or f16, and its f32 rows where the kernels want them.
struct Scales {
  const float* f32 = nullptr;
  const uint16_t* f16 = nullptr;
  int64_t ng = 0;  // per row

  explicit Scales(const Tensor& sc, int64_t groups) : ng(groups) {
    if (sc.dtype() == DType::f16)
      f16 = static_cast<const uint16_t*>(sc.raw());
    else
      f32 = sc.data<float>();
  }
  // Rows [j0, j0 + n) as f32: the tensor's own rows, or `buf` (n * ng floats) filled.
  const float* rows(const kernels::KernelTable& k, int64_t j0, int64_t n, float* buf) const {
    if (f32) return f32 + j0 * ng;
    k.widen_f16(f16 + j0 * ng, n * ng, buf);
    return buf;
  }
};

// fn(j, n, scale) for outputs [j0, j1) in pieces, scale the f32 scale rows of [j, j + n):
// one piece for f32 scales; for f16, pieces of kScalePiece outputs widened into a
// thread's buffer just before the kernel reads them (in cache, a 16th of the weight
// bytes it streams).
constexpr int64_t kScalePiece = 64;  // a multiple of the w4a8 kernel's 16-output tiles

template <typename Fn>
void for_scale_pieces(OpContext& ctx, const kernels::KernelTable& k, const Scales& sc, int64_t j0, int64_t j1, Fn fn) {
  if (sc.f32) {
    fn(j0, j1 - j0, sc.rows(k, j0, j1 - j0, nullptr));
    return;
  }
  Tensor buf = ctx.empty(DType::f32, Shape{std::min(kScalePiece, j1 - j0) * sc.ng});
  for (int64_t j = j0; j < j1; j += kScalePiece) {
    const int64_t n = std::min(kScalePiece, j1 - j);
    fn(j, n, sc.rows(k, j, n, buf.data<float>()));
  }
}

// A kernel problem narrowed to outputs [j, j + n) with their scale rows: the kernels'
// output index then runs over [0, n).
template <typename Problem>
Problem narrowed(Problem p, int64_t j, const float* scale) {
  p.w += j * (p.in_p / 2);
  p.scale = scale;
  if (p.bias) p.bias += j;
  p.y += j;
  return p;
}

// Checks weight and scale against `in` features and derives the group size.
Format check_format(const Tensor& w, const Tensor& sc, int64_t in) {
  if (w.dtype() != DType::i8 || w.ndim() != 2)
    vm::fail("weight must be i8 [out, in_p / 2] (two 4-bit weights a byte, quantize_int4), got {}", w.describe());
  const int64_t outf = w.size(0), in_p = 2 * w.size(1);
  if ((sc.dtype() != DType::f32 && sc.dtype() != DType::f16) || sc.ndim() != 2 || sc.size(0) != outf)
    vm::fail("scale must be f32 or f16 [{}, in_p / group], got {}", outf, sc.describe());
  const int64_t ng = sc.size(1);
  if (in_p == 0 && ng == 0) {
    if (in != 0) vm::fail("{} input features but the weight {} holds none", in, w.describe());
    return {outf, 0, kBlock};
  }
  if (ng == 0 || in_p % ng != 0 || (in_p / ng) % kBlock != 0)
    vm::fail("weight {} and scale {} do not give a group size that is a multiple of 32 (2 * weight.size(1) / "
             "scale.size(1))", w.describe(), sc.describe());
  const int64_t g = in_p / ng;
  if ((in + g - 1) / g * g != in_p)
    vm::fail("{} input features need ceil({} / {}) * {} = {} padded inputs, but the weight {} holds {}", in, in, g, g,
             (in + g - 1) / g * g, w.describe(), in_p);
  return {outf, in_p, g};
}

const uint8_t* nibbles(const Tensor& w) { return reinterpret_cast<const uint8_t*>(w.data<int8_t>()); }

// x rows with stride in_p, zero past `in`: x itself when in == in_p, else a copy.
const float* padded_rows(OpContext& ctx, const float* x, int64_t rows, int64_t in, int64_t in_p, Tensor& keep) {
  if (in == in_p) return x;
  keep = ctx.empty(DType::f32, Shape{rows, in_p});
  float* p = keep.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(p + r * in_p, x + r * in, size_t(in) * sizeof(float));
    std::fill(p + r * in_p + in, p + (r + 1) * in_p, 0.0f);
  }
  return p;
}

// What linear_int4 and linear_w4a8 share before their kernels: the checks, the output,
// and the empty cases (done: no rows or outputs, or no inputs and y the bias).
struct Linear4 {
  const Tensor& x;
  int64_t in, rows = 0;
  Format f;
  const float* bias;
  Tensor y;
  bool done;

  Linear4(OpContext& ctx, const Args& a) : x(a.tensor(0)), in(0), f{}, bias(nullptr), done(true) {
    if (x.dtype() != DType::f32) vm::fail("x must be f32, got {}", x.describe());
    if (x.ndim() < 1) vm::fail("x must have at least 1 dimension, got {}", x.describe());
    in = x.size(-1);
    f = check_format(a.tensor(1), a.tensor(2), in);
    const Tensor* b = a.opt_tensor(3);
    bias = b ? b->data<float>() : nullptr;
    y = linear_output(ctx, x, f.outf, b, rows);
    done = rows == 0 || f.outf == 0 || in == 0;
    if (in == 0) {
      float* yp = y.data<float>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < f.outf; ++j) yp[r * f.outf + j] = bias ? bias[j] : 0.0f;
    }
  }
};

// linear_int4(x, weight, scale, bias=None)
void linear_int4(OpContext& ctx, const Args& a, Value* out) {
  Linear4 l(ctx, a);
  if (!l.done) {
    const int64_t in = l.in, rows = l.rows;
    const Format& f = l.f;
    const float* bp = l.bias;
    float* yp = l.y.data<float>();
    const kernels::KernelTable& k = kernel_table();
    const uint8_t* qp = nibbles(a.tensor(1));
    const Scales sc(a.tensor(2), f.in_p / f.group);
    const float* xp = l.x.data<float>();
    if (rows <= kMaxStreamRows) {
      Tensor keep;
      const kernels::Int4Problem p{padded_rows(ctx, xp, rows, in, f.in_p, keep), f.in_p, f.group, qp, nullptr, bp, yp,
                                   f.outf};
      const int64_t grain = std::max<int64_t>(16, (int64_t(1) << 17) / (rows * f.in_p));
      ctx.parallel_for(f.outf, grain, [&](int64_t j0, int64_t j1) {
        for_scale_pieces(ctx, k, sc, j0, j1, [&](int64_t j, int64_t n, const float* s) {
          k.dot_rows_i4(narrowed(p, j, s), rows, 0, n);
        });
      });
    } else {
      // As linear_int8: blocks of weight rows dequantized into a per-thread f32 scratch,
      // then linear's f32 kernels (or the library's GEMM, on its fixed column blocks).
      const bool library = library_gemm_for(rows, in, f.outf);
      const int64_t block = library ? kLibraryGemmColumns : kBlockRows;
      const int64_t nblocks = (f.outf + block - 1) / block;
      ctx.parallel_for(nblocks, 1, [&](int64_t b0, int64_t b1) {
        Tensor scratch = ctx.empty(DType::f32, Shape{block, in});
        Tensor pack = ctx.empty(DType::f32, Shape{library ? 0 : k.gemm_pack_floats});
        Tensor scale_rows = ctx.empty(DType::f32, Shape{sc.f32 ? 0 : block * sc.ng});
        float* s = scratch.data<float>();
        for (int64_t blk = b0; blk < b1; ++blk) {
          const int64_t j0 = blk * block, n = std::min(block, f.outf - j0);
          k.dequantize_rows_i4(qp + j0 * (f.in_p / 2), sc.rows(k, j0, n, scale_rows.data<float>()), n, in, f.in_p,
                               f.group, s);
          const float* bj = bp ? bp + j0 : nullptr;
          if (library)
            library_gemm_columns(xp, rows, in, s, bj, yp + j0, f.outf, 0, n);
          else if (rows <= kMaxDotRows)
            k.dot_rows_f32(xp, rows, in, s, bj, n, yp + j0, f.outf);
          else
            k.gemm_rows_f32(xp, rows, in, s, bj, yp + j0, f.outf, 0, n, pack.data<float>());
        }
      });
    }
  }
  out[0] = std::move(l.y);
}

// Quantizes one row of x per block of 32 (llama.cpp's q8_0): q = rint(x * 127 / amax)
// with amax = max|x| over the block, scale amax / 127 (0 for a block of zeros). A row
// holding NaN or inf gets zeros and NaN scales, which make its output row NaN.
// c[b] = -8 * the block's sum of q (W4A8Problem::xc).
void quantize_row_blocks(const float* x, int64_t in, int64_t in_p, int8_t* q, float* s, int32_t* c) {
  bool finite = true;
  for (int64_t k = 0; k < in; ++k) finite &= std::fabs(x[k]) <= std::numeric_limits<float>::max();
  if (!finite) {
    std::fill(q, q + in_p, int8_t(0));
    std::fill(s, s + in_p / kBlock, std::numeric_limits<float>::quiet_NaN());
    std::fill(c, c + in_p / kBlock, 0);
    return;
  }
  for (int64_t k0 = 0; k0 < in_p; k0 += kBlock) {
    const int64_t n = std::clamp<int64_t>(in - k0, 0, kBlock);
    float amax = 0.0f;
    for (int64_t k = 0; k < n; ++k) amax = std::max(amax, std::fabs(x[k0 + k]));
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const float v = std::nearbyint(x[k0 + k] * inv);  // round half to even, like numpy.rint
      q[k0 + k] = int8_t(std::min(127.0f, std::max(-127.0f, v)));
      sum += q[k0 + k];
    }
    std::fill(q + k0 + n, q + k0 + kBlock, int8_t(0));
    s[k0 / kBlock] = amax / 127.0f;
    c[k0 / kBlock] = -8 * sum;
  }
}

// linear_w4a8(x, weight, scale, bias=None)
void linear_w4a8(OpContext& ctx, const Args& a, Value* out) {
  Linear4 l(ctx, a);
  if (!l.done) {
    const int64_t in = l.in, rows = l.rows;
    const Format& f = l.f;
    const int64_t nb = f.in_p / kBlock;
    Tensor qx = ctx.empty(DType::i8, Shape{rows, f.in_p});
    Tensor sx = ctx.empty(DType::f32, Shape{rows, nb});
    Tensor xc = ctx.empty(DType::i32, Shape{rows, nb});
    int8_t* qp = qx.data<int8_t>();
    float* sxp = sx.data<float>();
    int32_t* xcp = xc.data<int32_t>();
    const float* xp = l.x.data<float>();
    ctx.parallel_for(rows, std::max<int64_t>(1, 8192 / in), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) quantize_row_blocks(xp + r * in, in, f.in_p, qp + r * f.in_p, sxp + r * nb, xcp + r * nb);
    });
    const kernels::W4A8Problem p{qp, sxp, xcp, f.in_p, f.group, nibbles(a.tensor(1)), nullptr, l.bias,
                                 l.y.data<float>(), f.outf};
    const Scales sc(a.tensor(2), f.in_p / f.group);
    const kernels::KernelTable& k = kernel_table();
    // Multiples of 16 outputs (the kernel's tiles) of about 64K weight bytes x rows.
    const int64_t grain = std::max<int64_t>(16, (int64_t(1) << 17) / (std::min<int64_t>(rows, 16) * f.in_p)) / 16 * 16;
    ctx.parallel_for(f.outf, grain, [&](int64_t j0, int64_t j1) {
      for_scale_pieces(ctx, k, sc, j0, j1, [&](int64_t j, int64_t n, const float* s) {
        k.w4a8_rows(narrowed(p, j, s), rows, 0, n);
      });
    });
  }
  out[0] = std::move(l.y);
}

template <typename I>
void embedding_int4_rows(const kernels::KernelTable& k, const I* ids, int64_t n, const uint8_t* q, const Scales& sc,
                         const Format& f, int64_t d, float* y, float* scale_row) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = int64_t(ids[i]);
    if (id < 0 || id >= f.outf) vm::fail("id {} out of range [0, {})", id, f.outf);
    k.dequantize_rows_i4(q + id * (f.in_p / 2), sc.rows(k, id, 1, scale_row), 1, d, f.in_p, f.group, y + i * d);
  }
}

// embedding_int4(ids, weight, scale, features): the dequantized rows weight[ids] -> [..., features].
void embedding_int4(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& ids = a.tensor(0);
  const int64_t d = a.i64(3);
  if (ids.dtype() != DType::i64 && ids.dtype() != DType::i32) vm::fail("ids must be i64 or i32, got {}", ids.describe());
  if (d < 0) vm::fail("features must be >= 0, got {}", d);
  const Format f = check_format(a.tensor(1), a.tensor(2), d);
  Shape os = ids.shape();
  os.push_back(d);
  Tensor y = ctx.empty(DType::f32, os);
  const kernels::KernelTable& k = kernel_table();
  const uint8_t* q = nibbles(a.tensor(1));
  const Scales sc(a.tensor(2), f.in_p / f.group);
  Tensor scale_row = ctx.empty(DType::f32, Shape{sc.f32 ? 0 : sc.ng});
  if (ids.dtype() == DType::i64)
    embedding_int4_rows(k, ids.data<int64_t>(), ids.numel(), q, sc, f, d, y.data<float>(), scale_row.data<float>());
  else
    embedding_int4_rows(k, ids.data<int32_t>(), ids.numel(), q, sc, f, d, y.data<float>(), scale_row.data<float>());
  out[0] = std::move(y);
}

}  // namespace

void register_int4_ops(Registry& r) {
  const std::string format =
      "weight i8[out, in_p / 2] holds 4-bit q in [-8, 7], two a byte: each block of 32 inputs k0 .. k0 + 31 is 16 "
      "bytes, byte i = (q[k0 + i] + 8) | ((q[k0 + 16 + i] + 8) << 4) (llama.cpp q4_0's order); scale f32 or f16 [out, in_p / G] "
      "has one scale per group of G inputs (G = 2 * weight.size(1) / scale.size(1), a multiple of 32); in_p = "
      "ceil(in / G) * G, zero-padded. Built offline by pycompiler/quantize.py quantize_int4.";
  r.add(TENSORVM_OP("linear_int4", linear_int4), "linear algebra",
        {p_tensor("x"), p_tensor("weight"), p_tensor("scale"), p_opt_tensor("bias")}, {"Tensor"},
        "x[..., in] (f32) @ dequant(weight, scale)^T + bias[out]: a weight-only 4-bit linear, w[j, k] = q[j, k] * "
        "scale[j, k / G]. " + format);
  r.add(TENSORVM_OP("linear_w4a8", linear_w4a8), "linear algebra",
        {p_tensor("x"), p_tensor("weight"), p_tensor("scale"), p_opt_tensor("bias")}, {"Tensor"},
        "4-bit weights x int8 activations: each row of x[..., in] (f32) is quantized at run time per block of 32 "
        "inputs b to qx = rint(x * 127 / amax_b), sx_b = amax_b / 127 (amax_b = max|x| over the block; llama.cpp's "
        "q8_0), and y[j] = sum_b sx_b * scale[j, b * 32 / G] * (sum over the block of qx * q[j]) + bias[j], the "
        "block sums exact in int32. A row of x holding NaN or inf gives NaN. " + format);
  r.add(TENSORVM_OP("embedding_int4", embedding_int4), "nn",
        {p_tensor("ids"), p_tensor("weight"), p_tensor("scale"), p_int("features")}, {"Tensor"},
        "The rows weight[ids] of a 4-bit table [V, features], dequantized: f32[..., features]. ids i64 or i32 in "
        "[0, V). " + format);
}

}  // namespace ops
