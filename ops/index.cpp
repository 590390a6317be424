// Indexing: index_select (rows of a dim, e.g. beam reordering), gather and scatter
// (torch semantics, used by logits processors). Every index is range-checked: a bad
// index is an error naming it and the valid range.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ops/broadcast.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace ops {

namespace {

int norm_dim(int64_t dim, const Tensor& x) {
  const int nd = x.ndim();
  if (dim < -nd || dim >= nd) {
    if (nd == 0) vm::fail("dim {} out of range: x is 0-d ({})", dim, x.describe());
    vm::fail("dim {} out of range [{}, {}] for x {}", dim, -nd, nd - 1, x.describe());
  }
  return int(dim < 0 ? dim + nd : dim);
}

void check_index_dtype(const Tensor& index) {
  if (index.dtype() != DType::i64 && index.dtype() != DType::i32) vm::fail("index must be i64 or i32, got {}", index.describe());
}

[[noreturn]] void bad_index(int64_t v, int64_t n, int dim) {
  vm::fail("index {} out of range [0, {}) for dim {}", v, n, dim);
}

template <typename I>
void check_range(const I* idx, int64_t count, int64_t n, int dim) {
  for (int64_t j = 0; j < count; ++j)
    if (idx[j] < 0 || int64_t(idx[j]) >= n) bad_index(int64_t(idx[j]), n, dim);
}

// Calls f(T*) with the tensor's element type: float, int64_t, int32_t or uint8_t (bool, i8).
template <typename F>
void with_elem(DType t, F&& f) {
  switch (t) {
    case DType::f32: f(static_cast<float*>(nullptr)); break;
    case DType::i64: f(static_cast<int64_t*>(nullptr)); break;
    case DType::i32: f(static_cast<int32_t*>(nullptr)); break;
    default: f(static_cast<uint8_t*>(nullptr)); break;
  }
}

template <typename T, typename I>
void select_elems(const T* src, T* dst, const I* idx, int64_t outer, int64_t n, int64_t m) {
  for (int64_t o = 0; o < outer; ++o, src += n, dst += m)
    for (int64_t j = 0; j < m; ++j) dst[j] = src[idx[j]];
}

// Walks every element of an index tensor (same ndim as x, row-major) with the offset
// in x of the element it addresses: f(position in index, offset in x). Checks ranges.
template <typename I, typename F>
void walk_index(const Tensor& x, int dim, const Tensor& index, F&& f) {
  const int nd = x.ndim();
  const Shape xs = vm::contiguous_strides(x.shape());
  const int64_t n = x.shape()[dim];
  const int64_t last = index.shape()[nd - 1];
  if (index.numel() == 0) return;
  const int64_t rows = index.numel() / last;
  const I* idx = index.data<I>();
  const bool dim_is_last = dim == nd - 1;
  const int64_t sdim = xs[dim];
  int64_t pos[vm::kMaxDims] = {};
  int64_t base = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const I* ir = idx + r * last;
    for (int64_t j = 0; j < last; ++j) {
      const int64_t v = int64_t(ir[j]);
      if (v < 0 || v >= n) bad_index(v, n, dim);
      f(r * last + j, base + (dim_is_last ? 0 : j) + v * sdim);
    }
    for (int d = nd - 2; d >= 0; --d) {
      const int64_t step = d == dim ? 0 : xs[d];
      base += step;
      if (++pos[d] < index.shape()[d]) break;
      base -= step * index.shape()[d];
      pos[d] = 0;
    }
  }
}

// Checks index (gather/scatter): same ndim as x, no larger than x off `dim`.
void check_gather_index(const Tensor& x, int dim, const Tensor& index) {
  check_index_dtype(index);
  if (index.ndim() != x.ndim()) vm::fail("index must have the same number of dims as x {}, got {}", x.describe(), index.describe());
  for (int d = 0; d < x.ndim(); ++d)
    if (d != dim && index.shape()[d] > x.shape()[d])
      vm::fail("index {} is larger than x {} in dim {}", index.describe(), x.describe(), d);
}

}  // namespace

// index_select(x, dim, index): out = x with dim replaced by the rows index[j].
static void index_select(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const int dim = norm_dim(a.i64(1), x);
  const Tensor& index = a.tensor(2);
  check_index_dtype(index);
  if (index.ndim() != 1) vm::fail("index must be 1-D, got {}", index.describe());
  const int64_t n = x.shape()[dim], m = index.numel();
  if (index.dtype() == DType::i64)
    check_range(index.data<int64_t>(), m, n, dim);
  else
    check_range(index.data<int32_t>(), m, n, dim);
  Shape os = x.shape();
  os[dim] = m;
  Tensor y = ctx.empty(x.dtype(), os);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= os[d];
  for (int d = dim + 1; d < os.size(); ++d) inner *= os[d];
  if (y.numel() == 0) {
    out[0] = std::move(y);
    return;
  }
  if (inner == 1) {  // single elements: a typed loop
    with_elem(x.dtype(), [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const T* src = static_cast<const T*>(x.raw());
      T* dst = static_cast<T*>(y.raw());
      if (index.dtype() == DType::i64)
        select_elems(src, dst, index.data<int64_t>(), outer, n, m);
      else
        select_elems(src, dst, index.data<int32_t>(), outer, n, m);
    });
  } else {
    const size_t chunk = size_t(inner) * vm::dtype_size(x.dtype());
    const char* src = static_cast<const char*>(x.raw());
    char* dst = static_cast<char*>(y.raw());
    for (int64_t o = 0; o < outer; ++o) {
      const char* so = src + size_t(o * n) * chunk;
      for (int64_t j = 0; j < m; ++j, dst += chunk) {
        const int64_t i = index.dtype() == DType::i64 ? index.data<int64_t>()[j] : int64_t(index.data<int32_t>()[j]);
        std::memcpy(dst, so + size_t(i) * chunk, chunk);
      }
    }
  }
  out[0] = std::move(y);
}

// gather(x, dim, index): out[i][j][k] = x[i][index[i][j][k]][k] (dim 1), out.shape = index.shape.
static void gather(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const int dim = norm_dim(a.i64(1), x);
  const Tensor& index = a.tensor(2);
  check_gather_index(x, dim, index);
  Tensor y = ctx.empty(x.dtype(), index.shape());
  with_elem(x.dtype(), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* src = static_cast<const T*>(x.raw());
    T* dst = static_cast<T*>(y.raw());
    auto put = [src, dst](int64_t p, int64_t off) { dst[p] = src[off]; };
    if (index.dtype() == DType::i64)
      walk_index<int64_t>(x, dim, index, put);
    else
      walk_index<int32_t>(x, dim, index, put);
  });
  out[0] = std::move(y);
}

// scatter(x, dim, index, src): a copy of x with out[i][index[i][j][k]][k] = src[i][j][k] (dim 1).
static void scatter(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const int dim = norm_dim(a.i64(1), x);
  const Tensor& index = a.tensor(2);
  check_gather_index(x, dim, index);
  const Value& sv = a[3];
  const Tensor* src = nullptr;
  if (sv.is_tensor()) {
    src = &sv.tensor_unchecked();
    if (src->dtype() != x.dtype() || src->shape() != index.shape())
      vm::fail("src must be a tensor of x's dtype shaped like index, {}{}, got {}", vm::dtype_name(x.dtype()), index.shape().str(),
               src->describe());
  }
  alignas(8) unsigned char scalar[8] = {};  // a scalar src as an element of x's dtype
  if (!src) scalar_to_bytes(sv, x.dtype(), "argument 'src'", scalar);
  Tensor y = ctx.empty(x.dtype(), x.shape());
  std::memcpy(y.raw(), x.raw(), x.nbytes());
  with_elem(x.dtype(), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    T* dst = static_cast<T*>(y.raw());
    if (src) {
      const T* s = static_cast<const T*>(src->raw());
      auto put = [s, dst](int64_t p, int64_t off) { dst[off] = s[p]; };
      if (index.dtype() == DType::i64)
        walk_index<int64_t>(x, dim, index, put);
      else
        walk_index<int32_t>(x, dim, index, put);
    } else {
      T value;
      std::memcpy(&value, scalar, sizeof(T));
      auto put = [value, dst](int64_t, int64_t off) { dst[off] = value; };
      if (index.dtype() == DType::i64)
        walk_index<int64_t>(x, dim, index, put);
      else
        walk_index<int32_t>(x, dim, index, put);
    }
  });
  out[0] = std::move(y);
}

void register_index_ops(Registry& r) {
  r.add(TENSORVM_OP("index_select", index_select), "indexing",
        {p_tensor("x"), p_int("dim"), p_tensor("index")}, {"Tensor"},
        "The slices x[..., index[j], ...] along dim, for a 1-D i64/i32 index with values in [0, x.size(dim)) "
        "(e.g. reordering beams). Any dtype of x.");
  r.add(TENSORVM_OP("gather", gather), "indexing", {p_tensor("x"), p_int("dim"), p_tensor("index")}, {"Tensor"},
        "torch.gather: out[i][j] = x[i][index[i][j]] along dim; index (i64/i32) has x's ndim and is no larger "
        "than x off dim; out has index's shape and x's dtype.");
  r.add(TENSORVM_OP("scatter", scatter), "indexing",
        {p_tensor("x"), p_int("dim"), p_tensor("index"), p_scalar_or_tensor("src")}, {"Tensor"},
        "torch.scatter without mutation: a copy of x with out[i][index[i][j]] = src[i][j] along dim. src is a "
        "tensor of x's dtype shaped like index, or a scalar of x's kind; with repeated indices the last write wins.");
}

}  // namespace ops
