// Reductions and scans: sum, mean, max, min, any, all (over any set of dims),
// argmax, argmin, softmax, log_softmax, topk, cumsum (over one dim), item.
//
// Every kernel sees its input as [outer, R, inner] (R: the reduced extent). A set of
// dims that is adjacent once size-1 dims are ignored needs no copy; other sets are
// permuted to the back with one contiguous copy. inner == 1 (reducing the last dim,
// the hot case: logits rows) runs lane-parallel loops that the compiler vectorises;
// inner > 1 accumulates blocks of columns, again vectorised across columns.
// Float sums (sum, mean, softmax's denominator, cumsum) accumulate in double.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/broadcast.h"
#include "ops/cpu.h"
#include "ops/elementwise_math.h"
#include "ops/registry.h"
#include "ops/select.h"

// The SIMD row helpers of elementwise_math.h pass GCC vector types between inline
// functions; GCC notes (at the end of the file, where templates are emitted) that such
// calls have another ABI without AVX/AVX-512. They never cross an ABI boundary.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace ops {

namespace {

constexpr int64_t kBlock = 256;  // columns per block when inner > 1

// ---------------------------------------------------------------- dims

// A dim index of x (negative counts from the back). A 0-d tensor accepts 0 and -1.
int norm_dim(int64_t d, const Tensor& x, const char* what = "dim") {
  const int n = std::max(x.ndim(), 1);
  if (d < -n || d >= n)
    vm::fail("{} {} is out of range for x {} (expected {}..{})", what, d, x.describe(), -n, n - 1);
  return int(d < 0 ? d + n : d);
}

struct Layout {
  Tensor src;  // contiguous, viewed as [outer, R, inner]
  int64_t outer = 1, R = 1, inner = 1;
  Shape out_shape;
};

// The layout for reducing the dims in `dim` (None: all) of x.
Layout plan_dims(OpContext& ctx, const Tensor& x, const Value& dim, bool keepdim) {
  const int nd = x.ndim();
  bool red[vm::kMaxDims] = {};
  if (dim.is_none()) {
    for (int d = 0; d < nd; ++d) red[d] = true;
  } else {
    const Ints ds = dim.as_ints();
    if (ds.size() == 0) vm::fail("dim must name at least one dimension (None reduces all), got []");
    for (int64_t d0 : ds) {
      const int d = norm_dim(d0, x);
      if (nd == 0) continue;
      if (red[d]) vm::fail("dim {} is repeated in {}", d0, dim.describe());
      red[d] = true;
    }
  }
  Layout L;
  for (int d = 0; d < nd; ++d) {
    if (!red[d]) L.out_shape.push_back(x.shape()[d]);
    else if (keepdim) L.out_shape.push_back(1);
  }
  // Are the reduced dims (ignoring size 1) one adjacent run?
  int first = -1, last = -1;
  bool adjacent = true;
  for (int d = 0; d < nd; ++d) {
    if (x.shape()[d] == 1) continue;
    if (red[d]) {
      if (first < 0) first = d;
      last = d;
    }
  }
  if (first >= 0) {
    for (int d = first; d <= last; ++d)
      if (!red[d] && x.shape()[d] != 1) adjacent = false;
  }
  if (first < 0) {  // only size-1 dims (or none) are reduced
    L.src = x;
    L.outer = x.numel();
    return L;
  }
  if (adjacent) {
    L.src = x;
    for (int d = 0; d < first; ++d) L.outer *= x.shape()[d];
    for (int d = first; d <= last; ++d) L.R *= x.shape()[d];
    for (int d = last + 1; d < nd; ++d) L.inner *= x.shape()[d];
    return L;
  }
  // Permute kept dims to the front, reduced ones to the back, and copy once.
  Shape ps, pst;
  for (int pass = 0; pass < 2; ++pass)
    for (int d = 0; d < nd; ++d)
      if (red[d] == (pass == 1)) {
        ps.push_back(x.shape()[d]);
        pst.push_back(x.strides()[d]);
        (pass == 0 ? L.outer : L.R) *= x.shape()[d];
      }
  L.src = x.view(ps, pst, x.offset()).contiguous(ctx.pool);
  return L;
}

// The layout for one dim; out_shape has that dim set to `keep` (or removed if keep < 0).
Layout plan_dim(const Tensor& x, int64_t dim, int64_t keep) {
  Layout L;
  L.src = x;
  if (x.ndim() == 0) {
    norm_dim(dim, x);
    return L;  // outer = R = inner = 1, out_shape []
  }
  const int d = norm_dim(dim, x);
  for (int i = 0; i < x.ndim(); ++i) {
    const int64_t s = x.shape()[i];
    if (i < d) L.outer *= s;
    else if (i == d) L.R = s;
    else L.inner *= s;
    if (i != d) L.out_shape.push_back(s);
    else if (keep >= 0) L.out_shape.push_back(keep);
  }
  return L;
}

void check_nonempty(const Layout& L, const Tensor& x) {
  if (L.R == 0 && L.outer * L.inner > 0) vm::fail("cannot reduce over a zero-size dimension of x {}", x.describe());
}

// ---------------------------------------------------------------- sum / mean

template <typename T>
using SumAcc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

// y[o, i] = sum_r x[o, r, i] * scale, accumulating in double (floats) or wrapping uint64.
template <typename T, typename Out>
void sum_kernel(const T* x, Out* y, const Layout& L, double scale) {
  using Acc = SumAcc<T>;
  const int64_t R = L.R, inner = L.inner;
  for (int64_t o = 0; o < L.outer; ++o) {
    const T* xo = x + o * R * inner;
    if constexpr (std::is_same_v<T, float>) {
      if (inner == 1) {
        y[o] = Out(sum_f32(xo, R) * scale);
        continue;
      }
    }
    if (inner == 1) {
      constexpr int W = 8;
      Acc lane[W] = {};
      int64_t r = 0;
      for (; r + W <= R; r += W)
        for (int j = 0; j < W; ++j) lane[j] += Acc(xo[r + j]);
      Acc s = 0;
      for (int j = 0; j < W; ++j) s += lane[j];
      for (; r < R; ++r) s += Acc(xo[r]);
      if constexpr (std::is_floating_point_v<T>) y[o] = Out(s * scale);
      else y[o] = Out(int64_t(s));
    } else {
      for (int64_t i0 = 0; i0 < inner; i0 += kBlock) {
        const int64_t nb = std::min(kBlock, inner - i0);
        Acc acc[kBlock] = {};
        for (int64_t r = 0; r < R; ++r) {
          const T* row = xo + r * inner + i0;
          for (int64_t i = 0; i < nb; ++i) acc[i] += Acc(row[i]);
        }
        Out* yo = y + o * inner + i0;
        for (int64_t i = 0; i < nb; ++i) {
          if constexpr (std::is_floating_point_v<T>) yo[i] = Out(acc[i] * scale);
          else yo[i] = Out(int64_t(acc[i]));
        }
      }
    }
  }
}

void sum_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  if (x.dtype() == DType::i8) vm::fail("x must be f32, i64, i32 or bool, got {}", x.describe());
  Layout L = plan_dims(ctx, x, a[1], a.flag(2));
  const DType od = x.dtype() == DType::f32 ? DType::f32 : DType::i64;
  Tensor y = ctx.empty(od, L.out_shape);
  dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float>) sum_kernel(L.src.data<float>(), y.data<float>(), L, 1.0);
    else sum_kernel(in_data<T>(L.src), y.data<int64_t>(), L, 1.0);
  });
  out[0] = std::move(y);
}

void mean_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  if (x.dtype() != DType::f32) vm::fail("x must be f32, got {}", x.describe());
  Layout L = plan_dims(ctx, x, a[1], a.flag(2));
  Tensor y = ctx.empty(DType::f32, L.out_shape);
  // An empty mean is 0/0 = NaN (torch).
  sum_kernel(L.src.data<float>(), y.data<float>(), L, L.R == 0 ? std::nan("") : 1.0 / double(L.R));
  out[0] = std::move(y);
}

// ---------------------------------------------------------------- max / min / any / all

// Whether v should replace the current extreme m (NaN wins and stays, like torch).
template <bool MAX, typename T>
inline bool replaces(T v, T m) {
  if constexpr (std::is_floating_point_v<T>) return (MAX ? v > m : v < m) || (v != v);
  else return MAX ? v > m : v < m;
}

template <bool MAX, typename T>
void extreme_kernel(const T* x, T* y, const Layout& L) {
  const int64_t R = L.R, inner = L.inner;
  for (int64_t o = 0; o < L.outer; ++o) {
    const T* xo = x + o * R * inner;
    if constexpr (std::is_same_v<T, float>) {
      if (inner == 1) {
        bool nan = false;
        const float m = extreme_f32<MAX>(xo, R, nan);
        y[o] = nan ? std::numeric_limits<float>::quiet_NaN() : m;
        continue;
      }
    }
    if (inner == 1) {
      constexpr int W = 16;
      T m = xo[0];
      int64_t r = 1;
      if (R >= 2 * W) {
        T lane[W];
        for (int j = 0; j < W; ++j) lane[j] = xo[j];
        for (r = W; r + W <= R; r += W)
          for (int j = 0; j < W; ++j) {
            const T v = xo[r + j];
            lane[j] = replaces<MAX>(v, lane[j]) ? v : lane[j];
          }
        for (int j = 0; j < W; ++j) m = replaces<MAX>(lane[j], m) ? lane[j] : m;
      }
      for (; r < R; ++r) m = replaces<MAX>(xo[r], m) ? xo[r] : m;
      y[o] = m;
    } else {
      for (int64_t i0 = 0; i0 < inner; i0 += kBlock) {
        const int64_t nb = std::min(kBlock, inner - i0);
        T acc[kBlock];
        for (int64_t i = 0; i < nb; ++i) acc[i] = xo[i0 + i];
        for (int64_t r = 1; r < R; ++r) {
          const T* row = xo + r * inner + i0;
          for (int64_t i = 0; i < nb; ++i) acc[i] = replaces<MAX>(row[i], acc[i]) ? row[i] : acc[i];
        }
        std::copy(acc, acc + nb, y + o * inner + i0);
      }
    }
  }
}

template <bool MAX>
void extreme_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  Layout L = plan_dims(ctx, x, a[1], a.flag(2));
  check_nonempty(L, x);
  out[0] = dispatch_numeric(x, "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor y = ctx.empty(x.dtype(), L.out_shape);
    if (L.R > 0) extreme_kernel<MAX>(L.src.data<T>(), y.data<T>(), L);
    return y;
  });
}

template <bool ANY>
void anyall_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  if (x.dtype() != DType::boolean) vm::fail("x must be a bool tensor, got {}", x.describe());
  Layout L = plan_dims(ctx, x, a[1], a.flag(2));
  Tensor y = ctx.empty(DType::boolean, L.out_shape);
  const uint8_t* px = static_cast<const uint8_t*>(L.src.raw());
  bool* py = y.data<bool>();
  const int64_t R = L.R, inner = L.inner;
  for (int64_t o = 0; o < L.outer; ++o) {
    const uint8_t* xo = px + o * R * inner;
    for (int64_t i0 = 0; i0 < inner; i0 += kBlock) {
      const int64_t nb = std::min(kBlock, inner - i0);
      uint8_t acc[kBlock];
      std::fill(acc, acc + nb, ANY ? 0 : 1);
      for (int64_t r = 0; r < R; ++r) {
        const uint8_t* row = xo + r * inner + i0;
        for (int64_t i = 0; i < nb; ++i) acc[i] = ANY ? (acc[i] | row[i]) : (acc[i] & row[i]);
      }
      for (int64_t i = 0; i < nb; ++i) py[o * inner + i0 + i] = acc[i] != 0;
    }
  }
  out[0] = std::move(y);
}

// ---------------------------------------------------------------- argmax / argmin

// The first index of the extreme of a contiguous row (n >= 1); NaN counts as the
// extreme (the first NaN wins), like torch and numpy.
template <bool MAX, typename T>
int64_t arg_row(const T* p, int64_t n) {
  constexpr int W = 16;
  constexpr bool F = std::is_floating_point_v<T>;
  T best = p[0];
  int64_t bi = 0;
  int64_t i = 1;
  bool nan = F && p[0] != p[0];
  if (n >= 2 * W && n < (int64_t(1) << 31)) {
    T lv[W];
    int32_t li[W];
    uint8_t ln[W];
    for (int j = 0; j < W; ++j) {
      lv[j] = p[j];
      li[j] = j;
      ln[j] = F && p[j] != p[j];
    }
    for (i = W; i + W <= n; i += W)
      for (int j = 0; j < W; ++j) {
        const T v = p[i + j];
        const bool b = MAX ? v > lv[j] : v < lv[j];
        lv[j] = b ? v : lv[j];
        li[j] = b ? int32_t(i + j) : li[j];
        if constexpr (F) ln[j] |= uint8_t(v != v);
      }
    best = lv[0];
    bi = li[0];
    for (int j = 0; j < W; ++j) {
      nan = nan || ln[j];
      if ((MAX ? lv[j] > best : lv[j] < best) || (lv[j] == best && li[j] < bi)) {
        best = lv[j];
        bi = li[j];
      }
    }
  }
  for (; i < n; ++i) {  // the tail (or the whole row): later indices win only strictly
    const T v = p[i];
    if (MAX ? v > best : v < best) {
      best = v;
      bi = i;
    }
    if constexpr (F) nan = nan || v != v;
  }
  if (F && nan) {
    for (int64_t k = 0; k < n; ++k)
      if (p[k] != p[k]) return k;
  }
  return bi;
}

template <bool MAX>
void argext_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  Layout L = plan_dim(x, a.i64(1), a.flag(2) ? 1 : -1);
  check_nonempty(L, x);
  Tensor y = ctx.empty(DType::i64, L.out_shape);
  int64_t* py = y.data<int64_t>();
  dispatch_numeric(x, "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr bool F = std::is_floating_point_v<T>;
    const T* px = x.data<T>();
    const int64_t R = L.R, inner = L.inner;
    if (R == 0) return;
    for (int64_t o = 0; o < L.outer; ++o) {
      const T* xo = px + o * R * inner;
      if (inner == 1) {
        if constexpr (F) py[o] = arg_extreme_f32<MAX>(xo, R);
        else py[o] = arg_row<MAX>(xo, R);
        continue;
      }
      for (int64_t i0 = 0; i0 < inner; i0 += kBlock) {
        const int64_t nb = std::min(kBlock, inner - i0);
        T bv[kBlock];
        int64_t bi[kBlock] = {};
        std::copy(xo + i0, xo + i0 + nb, bv);
        for (int64_t r = 1; r < R; ++r) {
          const T* row = xo + r * inner + i0;
          for (int64_t i = 0; i < nb; ++i) {
            const T v = row[i];
            bool b = MAX ? v > bv[i] : v < bv[i];
            if constexpr (F) b = b || (v != v && bv[i] == bv[i]);
            bv[i] = b ? v : bv[i];
            bi[i] = b ? r : bi[i];
          }
        }
        std::copy(bi, bi + nb, py + o * inner + i0);
      }
    }
  });
  out[0] = std::move(y);
}

// ---------------------------------------------------------------- softmax

template <bool LOG>
void softmax_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  if (x.dtype() != DType::f32) vm::fail("x must be f32, got {}", x.describe());
  Layout L = plan_dim(x, a.i64(1), 0);
  Tensor y = ctx.empty(DType::f32, x.shape());
  const float* px = x.data<float>();
  float* py = y.data<float>();
  const int64_t R = L.R, inner = L.inner;
  if (R == 0) {
    out[0] = std::move(y);
    return;
  }
  if (inner == 1) {
    // Rows are independent (beam search: [batch x beams, vocab]); split them over threads.
    // The row kernel is the active variant's (ops/kernels/softmax.h).
    const auto rows = kernel_table().softmax_rows;
    ctx.parallel_for(L.outer, std::max<int64_t>(1, kParallelElements / R), [&](int64_t o0, int64_t o1) {
      rows(px + o0 * R, py + o0 * R, o1 - o0, R, LOG);
    });
    out[0] = std::move(y);
    return;
  }
  for (int64_t o = 0; o < L.outer; ++o) {
    const float* xo = px + o * R * inner;
    float* yo = py + o * R * inner;
    for (int64_t i0 = 0; i0 < inner; i0 += kBlock) {
      const int64_t nb = std::min(kBlock, inner - i0);
      float m[kBlock];
      double s[kBlock] = {};
      std::copy(xo + i0, xo + i0 + nb, m);
      for (int64_t r = 1; r < R; ++r) {
        const float* row = xo + r * inner + i0;
        for (int64_t i = 0; i < nb; ++i) m[i] = row[i] > m[i] ? row[i] : m[i];
      }
      for (int64_t r = 0; r < R; ++r) {
        const float* row = xo + r * inner + i0;
        float* orow = yo + r * inner + i0;
        int64_t i = 0;
        for (; i + simd::kLanes <= nb; i += simd::kLanes) {
          simd::fv e;
          exp_v(simd::load(row + i) - simd::load(m + i), e);
          std::memcpy(orow + i, &e, sizeof e);
        }
        for (; i < nb; ++i) orow[i] = exp_f32(row[i] - m[i]);
        for (int64_t i = 0; i < nb; ++i) s[i] += double(orow[i]);
      }
      float f[kBlock];
      for (int64_t i = 0; i < nb; ++i) f[i] = LOG ? std::log(float(s[i])) : float(1.0 / s[i]);
      for (int64_t r = 0; r < R; ++r) {
        const float* row = xo + r * inner + i0;
        float* orow = yo + r * inner + i0;
        if constexpr (LOG) {
          for (int64_t i = 0; i < nb; ++i) orow[i] = (row[i] - m[i]) - f[i];
        } else {
          for (int64_t i = 0; i < nb; ++i) orow[i] *= f[i];
        }
      }
    }
  }
  out[0] = std::move(y);
}

// ---------------------------------------------------------------- topk

// Order for topk: NaN is greater than everything (torch); ties by lower index first.
template <typename T>
inline bool greater(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a > b || (a != a && b == b);
  else return a > b;
}

template <typename T, bool LARGEST>
struct Better {
  bool operator()(const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) const {
    const bool ab = LARGEST ? greater(a.first, b.first) : greater(b.first, a.first);
    if (ab) return true;
    const bool ba = LARGEST ? greater(b.first, a.first) : greater(a.first, b.first);
    return !ba && a.second < b.second;
  }
};

// The k best of p[0..n) (strided by `stride`), best first, into vals/idx (strided by ostride).
template <typename T, bool LARGEST>
void topk_row(const T* p, int64_t n, int64_t stride, int64_t k, T* vals, int64_t* idx, int64_t ostride,
              std::pair<T, int64_t>* heap) {
  if (k == 0) return;
  Better<T, LARGEST> better;
  // A heap of the k best so far whose top is the worst of them: an element enters only
  // if it beats the top (strictly: a later index never wins a tie).
  for (int64_t i = 0; i < k; ++i) heap[i] = {p[i * stride], i};
  std::make_heap(heap, heap + k, better);
  T worst = heap[0].first;
  auto visit = [&](int64_t i) {
    const T v = p[i * stride];
    if (LARGEST ? greater(v, worst) : greater(worst, v)) {
      std::pop_heap(heap, heap + k, better);
      heap[k - 1] = {v, i};
      std::push_heap(heap, heap + k, better);
      worst = heap[0].first;
    }
  };
  int64_t i = k;
  if constexpr (std::is_same_v<T, float>) {
    // Logits rows: skip 16 elements at a time while none can enter the heap (a
    // superset test; the exact test runs on chunks that pass).
    if (stride == 1) {
      for (; i + simd::kLanes <= n; i += simd::kLanes) {
        if (!any_may_enter_f32<LARGEST>(p + i, worst)) continue;
        for (int64_t j = i; j < i + simd::kLanes; ++j) visit(j);
      }
    }
  }
  for (; i < n; ++i) visit(i);
  std::sort_heap(heap, heap + k, better);
  for (int64_t i = 0; i < k; ++i) {
    vals[i * ostride] = heap[i].first;
    idx[i * ostride] = heap[i].second;
  }
}

void topk_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const int64_t k = a.i64(1);
  const bool largest = a.flag(3);
  Layout L = plan_dim(x, a.i64(2), k);
  if (k < 0 || k > L.R) vm::fail("k = {} is out of range for a dimension of size {} (x {})", k, L.R, x.describe());
  if (x.ndim() == 0 && k != 1) vm::fail("k = {}: a 0-d x has one element and needs k = 1", k);
  Tensor vals = dispatch_numeric(x, "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return ctx.empty(vm::dtype_of<T>::value, L.out_shape);
  });
  Tensor idx = ctx.empty(DType::i64, L.out_shape);
  // Rows are independent (beam search: [batch, beams x vocab], a million scores a row
  // for NLLB): split them over threads, each with its own heap of k (value, index) pairs.
  dispatch_numeric(x, "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using P = std::pair<T, int64_t>;
    const T* px = x.data<T>();
    T* pv = vals.data<T>();
    int64_t* pi = idx.data<int64_t>();
    const int64_t grain = std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, L.R * L.inner));
    ctx.parallel_for(L.outer, grain, [&](int64_t o0, int64_t o1) {
      Tensor scratch = ctx.empty(DType::i64, Shape{2 * std::max<int64_t>(k, 1)});
      P* heap = reinterpret_cast<P*>(scratch.data<int64_t>());
      for (int64_t o = o0; o < o1; ++o)
        for (int64_t i = 0; i < L.inner; ++i) {
          const T* row = px + o * L.R * L.inner + i;
          const int64_t ob = o * k * L.inner + i;
          if (largest) topk_row<T, true>(row, L.R, L.inner, k, pv + ob, pi + ob, L.inner, heap);
          else topk_row<T, false>(row, L.R, L.inner, k, pv + ob, pi + ob, L.inner, heap);
        }
    });
  });
  out[0] = std::move(vals);
  out[1] = std::move(idx);
}

// ---------------------------------------------------------------- cumsum

void cumsum_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  if (x.dtype() == DType::i8) vm::fail("x must be f32, i64, i32 or bool, got {}", x.describe());
  Layout L = plan_dim(x, a.i64(1), 0);
  const DType od = x.dtype() == DType::f32 ? DType::f32 : DType::i64;
  Tensor y = ctx.empty(od, x.shape());
  dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = SumAcc<T>;
    using Out = std::conditional_t<std::is_same_v<T, float>, float, int64_t>;
    const storage_t<T>* px = in_data<T>(x);
    Out* py = y.data<Out>();
    const int64_t R = L.R, inner = L.inner;
    for (int64_t o = 0; o < L.outer; ++o) {
      const storage_t<T>* xo = px + o * R * inner;
      Out* yo = py + o * R * inner;
      for (int64_t i0 = 0; i0 < inner; i0 += kBlock) {
        const int64_t nb = std::min(kBlock, inner - i0);
        Acc acc[kBlock] = {};
        for (int64_t r = 0; r < R; ++r) {
          for (int64_t i = 0; i < nb; ++i) {
            acc[i] += Acc(xo[r * inner + i0 + i]);
            if constexpr (std::is_floating_point_v<T>) yo[r * inner + i0 + i] = Out(acc[i]);
            else yo[r * inner + i0 + i] = Out(int64_t(acc[i]));
          }
        }
      }
    }
  });
  out[0] = std::move(y);
}

// ---------------------------------------------------------------- item

void item_op(OpContext&, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  if (x.numel() != 1) vm::fail("x must have exactly one element, got {}", x.describe());
  switch (x.dtype()) {
    case DType::f32: out[0] = Value::from_float(double(*x.data<float>())); return;
    case DType::i64: out[0] = Value::from_int(*x.data<int64_t>()); return;
    case DType::i32: out[0] = Value::from_int(*x.data<int32_t>()); return;
    case DType::boolean: out[0] = Value::from_bool(*x.data<bool>()); return;
    default: break;
  }
  vm::fail("x must be f32, i64, i32 or bool, got {}", x.describe());
}

// ---------------------------------------------------------------- registration

std::vector<Param> dims_params() { return {p_tensor("x"), p_opt_ints("dim"), p_bool("keepdim", false)}; }

}  // namespace

// log_softmax over the last dim, then -inf where banned[j] (bool [V]): beam search's
// scores with the tokens banned at every step (one-token bad words) in the same pass,
// instead of a second pass of masked_fill over [rows, V] (pycompiler/generation/search.py).
void log_softmax_masked_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Tensor& banned = a.tensor(1);
  if (x.dtype() != DType::f32 || x.ndim() < 1) vm::fail("x must be f32 with at least 1 dimension, got {}", x.describe());
  const int64_t V = x.size(-1);
  if (banned.dtype() != DType::boolean || banned.ndim() != 1 || banned.size(0) != V)
    vm::fail("banned must be bool [{}] (x's last dimension), got {}", V, banned.describe());
  const Tensor xc = x.contiguous();
  const Tensor bc = banned.contiguous();
  // The banned ids, in a tensor from the pool (no heap allocation per step).
  Tensor ban_ids = ctx.empty(DType::i64, Shape{V});
  int64_t* ban = ban_ids.data<int64_t>();
  int64_t nban = 0;
  const bool* bp = bc.data<bool>();
  for (int64_t j = 0; j < V; ++j)
    if (bp[j]) ban[nban++] = j;
  Tensor y = ctx.empty(DType::f32, x.shape());
  const int64_t rows = V == 0 ? 0 : x.numel() / V;
  const float* px = xc.data<float>();
  float* py = y.data<float>();
  const auto softmax_rows = kernel_table().softmax_rows;
  ctx.parallel_for(rows, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(V, 1)), [&](int64_t r0, int64_t r1) {
    softmax_rows(px + r0 * V, py + r0 * V, r1 - r0, V, true);
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t i = 0; i < nban; ++i) py[r * V + ban[i]] = -std::numeric_limits<float>::infinity();
  });
  out[0] = std::move(y);
}

void register_reduce_ops(Registry& r) {
  r.add(TENSORVM_OP("sum", sum_op), "reduction", dims_params(), {"Tensor"},
        "Sum over dim (an int or int list; None: all dims), keepdim keeps them as size 1. f32 gives f32 (accumulated "
        "in double); i64, i32 and bool give i64 (wrapping). An empty sum is 0.");
  r.add(TENSORVM_OP("mean", mean_op), "reduction", dims_params(), {"Tensor"},
        "Mean over dim (int, int list or None for all), keepdim as in sum. f32 only (accumulated in double); an empty "
        "mean is NaN.");
  r.add(TENSORVM_OP("max", extreme_op<true>), "reduction", dims_params(), {"Tensor"},
        "Maximum over dim (int, int list or None for all) of an f32/i64/i32 tensor; NaN propagates. Reducing a "
        "zero-size dim into a non-empty result is an error.");
  r.add(TENSORVM_OP("min", extreme_op<false>), "reduction", dims_params(), {"Tensor"},
        "Minimum over dim (int, int list or None for all) of an f32/i64/i32 tensor; NaN propagates. Reducing a "
        "zero-size dim into a non-empty result is an error.");
  r.add(TENSORVM_OP("any", anyall_op<true>), "reduction", dims_params(), {"Tensor"},
        "Whether any element is True over dim (int, int list or None for all) of a bool tensor; empty gives False.");
  r.add(TENSORVM_OP("all", anyall_op<false>), "reduction", dims_params(), {"Tensor"},
        "Whether all elements are True over dim (int, int list or None for all) of a bool tensor; empty gives True.");
  r.add(TENSORVM_OP("argmax", argext_op<true>), "reduction",
        {p_tensor("x"), p_int("dim", -1), p_bool("keepdim", false)}, {"Tensor"},
        "i64 index of the maximum along dim of an f32/i64/i32 tensor: the first one on ties; a NaN counts as the "
        "maximum (the first NaN wins).");
  r.add(TENSORVM_OP("argmin", argext_op<false>), "reduction",
        {p_tensor("x"), p_int("dim", -1), p_bool("keepdim", false)}, {"Tensor"},
        "i64 index of the minimum along dim of an f32/i64/i32 tensor: the first one on ties; a NaN counts as the "
        "minimum (the first NaN wins).");
  r.add(TENSORVM_OP("softmax", softmax_op<false>), "reduction", {p_tensor("x"), p_int("dim", -1)}, {"Tensor"},
        "exp(x - max) / sum(exp(x - max)) along dim (f32). A row that is all -inf (or holds NaN or +inf) gives NaN, "
        "like torch.");
  r.add(TENSORVM_OP("log_softmax", softmax_op<true>), "reduction", {p_tensor("x"), p_int("dim", -1)}, {"Tensor"},
        "x - max - log(sum(exp(x - max))) along dim (f32). A row that is all -inf (or holds NaN or +inf) gives NaN, "
        "like torch.");
  r.add(TENSORVM_OP("log_softmax_masked", log_softmax_masked_op), "reduction",
        {p_tensor("x"), p_tensor("banned")}, {"Tensor"},
        "log_softmax(x, -1) with -inf where banned (bool [V], x's last dimension) is True, in one pass: beam "
        "search's step scores with the tokens banned at every step. Exactly masked_fill(log_softmax(x, -1), banned, "
        "-inf).");
  r.add(TENSORVM_OP("topk", topk_op), "reduction",
        {p_tensor("x"), p_int("k"), p_int("dim", -1), p_bool("largest", true)},
        {"Tensor", "Tensor"},
        "The k largest (largest=False: smallest) elements along dim of an f32/i64/i32 tensor and their i64 indices, "
        "best first; ties go to the lower index, NaN counts as larger than everything. 0 <= k <= size of dim (a 0-d x "
        "needs k = 1 and gives 0-d outputs).");
  r.add(TENSORVM_OP("cumsum", cumsum_op), "reduction", {p_tensor("x"), p_int("dim")}, {"Tensor"},
        "Inclusive prefix sum along dim: f32 gives f32 (accumulated in double), i64/i32/bool give i64.");
  r.add(TENSORVM_OP("item", item_op), "reduction", {p_tensor("x")}, {"Any"},
        "The value of a one-element tensor (any rank) as a scalar: int for i64/i32, float for f32, bool for bool.",
        ResultRule::Scalar);
}

}  // namespace ops
