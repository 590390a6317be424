// Broadcasting and strided iteration for kernels.
//
//   broadcast_shapes(a, b)    numpy broadcasting of two shapes (error names both)
//   expand(t, shape)          a zero-stride view of t broadcast to `shape` (no copy)
//   broadcast_strides(...)    the strides that read a tensor as if it had a larger shape
//   StridedLoop<N>            a collapsed loop nest over N operands (any strides, 0 = broadcast)
//   map1 / map2 / map3        out[i] = f(a[i], ...) over broadcast operands, out contiguous,
//                             with fast inner loops for the common cases
//   storage_t, in/out_data    bool tensors are read/written as uint8_t (vectorisable)
//   dispatch(dtype, f)        calls f(T{}) with the C++ type of a dtype
//   scalar_to<T>(v, what)     converts an int/float/bool Value to a tensor element type
//
// The fast paths of map2 (others analogous): after collapsing, the innermost run has
// per-operand stride 1 or 0, so
//   same-shape contiguous       one run of numel elements, o[i] = f(a[i], b[i])
//   tensor ∘ scalar             the scalar is an operand with stride 0: o[i] = f(a[i], s)
//   [B, T, D] ∘ [D] (inner contiguous broadcast)   B*T runs of D with strides (1, 1)
//   [B, T, D] ∘ [B, T, 1]       runs of D with strides (1, 0)
// and only genuinely strided inner runs (a transposed view) take the general loop.
// Kernels pass lambdas (inlined); there are no per-element indirect calls.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "core/value.h"

namespace ops {

using vm::DType;
using vm::Shape;
using vm::Tensor;
using vm::Value;

// numpy broadcasting. Throws vm::Error "cannot broadcast shapes [2, 3] and [4]".
Shape broadcast_shapes(const Shape& a, const Shape& b);

// A view of `t` with shape `shape` (numpy broadcast of t to it): new leading dims and
// size-1 dims that grow get stride 0. No copy. -1 in `shape` keeps t's size for that
// (existing) dim. Throws "cannot expand f32[2, 3] to [4, 3]" when impossible.
Tensor expand(const Tensor& t, const Shape& shape);

// Strides (in elements) that read a tensor with `in_shape`/`in_strides` as the shape
// `out_shape` it broadcasts to (0 for broadcast dims). Assumes the shapes broadcast.
Shape broadcast_strides(const Shape& in_shape, const Shape& in_strides, const Shape& out_shape);

// ---------------------------------------------------------------- StridedLoop

// Element-wise work below this many elements runs on one thread (a hand-over costs
// about a microsecond; 64K elements take ~10).
constexpr int64_t kParallelElements = int64_t(1) << 16;

// A loop nest over `shape` for N operands with their own element strides. Size-1 dims
// are dropped and adjacent dims that are contiguous for every operand are merged, so
// the innermost run is as long as possible. Iterate with for_each_run.
template <int N>
struct StridedLoop {
  int ndim = 0;                      // collapsed dims; >= 1 (a 0-d shape is one run of 1)
  int64_t shape[vm::kMaxDims] = {};  // collapsed sizes
  int64_t stride[vm::kMaxDims][N] = {};
  int64_t numel = 0;

  // strides[k] are operand k's strides over `full_shape` (same rank).
  StridedLoop(const Shape& full_shape, const Shape* const (&strides)[N]) {
    numel = full_shape.numel();
    int dims[vm::kMaxDims];
    int nd = 0;
    for (int d = 0; d < full_shape.size(); ++d)
      if (full_shape[d] != 1) dims[nd++] = d;
    // Collapse from the innermost dim outwards.
    ndim = 0;
    for (int i = nd - 1; i >= 0; --i) {
      const int d = dims[i];
      if (ndim > 0) {
        const int c = ndim - 1;  // the dim being grown (stored reversed for now)
        bool merge = true;
        for (int k = 0; k < N; ++k)
          if ((*strides[k])[d] != stride[c][k] * shape[c]) merge = false;
        if (merge) {
          shape[c] *= full_shape[d];
          continue;
        }
      }
      shape[ndim] = full_shape[d];
      for (int k = 0; k < N; ++k) stride[ndim][k] = (*strides[k])[d];
      ++ndim;
    }
    if (ndim == 0) {  // every dim is 1 (or a 0-d shape): one run of one element
      shape[0] = 1;
      for (int k = 0; k < N; ++k) stride[0][k] = 0;
      ndim = 1;
    }
    // Reverse into outer-to-inner order.
    for (int i = 0, j = ndim - 1; i < j; ++i, --j) {
      std::swap(shape[i], shape[j]);
      for (int k = 0; k < N; ++k) std::swap(stride[i][k], stride[j][k]);
    }
  }

  int64_t inner_size() const { return shape[ndim - 1]; }
  int64_t inner_stride(int k) const { return stride[ndim - 1][k]; }

  // Calls f(const int64_t* off, int64_t n) for the elements [begin, end) of the
  // row-major order: `off[k]` is operand k's element offset of the run's first element;
  // the run has n elements with strides inner_stride(k). Runs are cut at begin and end,
  // so that threads can take disjoint ranges.
  template <typename F>
  void for_each_run_in(int64_t begin, int64_t end, F&& f) const {
    if (begin >= end) return;
    const int64_t n = inner_size();
    int64_t idx[vm::kMaxDims] = {};
    int64_t off[N] = {};
    int64_t rest = begin;
    for (int d = ndim - 1; d >= 0; --d) {
      idx[d] = rest % shape[d];
      rest /= shape[d];
      for (int k = 0; k < N; ++k) off[k] += idx[d] * stride[d][k];
    }
    for (int64_t pos = begin; pos < end;) {
      const int64_t len = std::min(n - idx[ndim - 1], end - pos);
      f(static_cast<const int64_t*>(off), len);
      pos += len;
      if (pos >= end) break;
      // to the start of the next run
      for (int k = 0; k < N; ++k) off[k] -= idx[ndim - 1] * stride[ndim - 1][k];
      idx[ndim - 1] = 0;
      for (int d = ndim - 2; d >= 0; --d) {
        for (int k = 0; k < N; ++k) off[k] += stride[d][k];
        if (++idx[d] < shape[d]) break;
        for (int k = 0; k < N; ++k) off[k] -= stride[d][k] * shape[d];
        idx[d] = 0;
      }
    }
  }

  // for_each_run_in over every element, split over `pool`'s threads (null: none) when
  // there is enough work to pay for it.
  template <typename F>
  void for_each_run(vm::ThreadPool* pool, F&& f) const {
    if (pool && numel >= kParallelElements) {
      pool->parallel_for(numel, kParallelElements / 2, [&](int64_t b, int64_t e) { for_each_run_in(b, e, f); });
    } else {
      for_each_run_in(0, numel, f);
    }
  }
};

// Bool tensors hold one byte, 0 or 1. Kernels read and write them as uint8_t: compilers
// do not vectorise loads and stores of C++ bool.
template <typename T>
using storage_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

// The element pointer of a tensor of dtype T (checked), as its storage type.
template <typename T>
const storage_t<T>* in_data(const Tensor& t) {
  return reinterpret_cast<const storage_t<T>*>(t.data<T>());
}
template <typename T>
storage_t<T>* out_data(const Tensor& t) {
  return reinterpret_cast<storage_t<T>*>(t.data<T>());
}

// An operand of map1/map2/map3: a typed pointer and its strides over the output shape.
template <typename S>
struct Operand {
  const S* data;
  Shape strides;  // broadcast strides over the output shape (0 = repeated)
};

// A tensor of dtype T read as the broadcast `out_shape` (bool tensors as uint8_t).
template <typename T>
Operand<storage_t<T>> operand(const Tensor& t, const Shape& out_shape) {
  return {in_data<T>(t), broadcast_strides(t.shape(), t.strides(), out_shape)};
}

// A scalar operand: every element reads *value (keep `value` alive during the call).
template <typename S>
Operand<S> scalar_operand(const S* value, const Shape& out_shape) {
  Shape s;
  s.resize(out_shape.size(), 0);
  return {value, s};
}

// out (contiguous, `shape`)[i] = f(a[i]).
template <typename R, typename A, typename F>
void map1(R* __restrict out, const Operand<A>& a, const Shape& shape, F f, vm::ThreadPool* pool = nullptr) {
  const Shape os = vm::contiguous_strides(shape);
  const Shape* const st[2] = {&os, &a.strides};
  StridedLoop<2> loop(shape, st);
  const int64_t sa = loop.inner_stride(1);
  loop.for_each_run(pool, [&](const int64_t* off, int64_t n) {
    R* __restrict o = out + off[0];
    const A* __restrict pa = a.data + off[1];
    if (sa == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i]);
    } else if (sa == 0) {
      const R v = f(pa[0]);
      for (int64_t i = 0; i < n; ++i) o[i] = v;
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i * sa]);
    }
  });
}

// out (contiguous, `shape`)[i] = f(a[i], b[i]).
template <typename R, typename A, typename B, typename F>
void map2(R* __restrict out, const Operand<A>& a, const Operand<B>& b, const Shape& shape, F f,
          vm::ThreadPool* pool = nullptr) {
  const Shape os = vm::contiguous_strides(shape);
  const Shape* const st[3] = {&os, &a.strides, &b.strides};
  StridedLoop<3> loop(shape, st);
  const int64_t sa = loop.inner_stride(1), sb = loop.inner_stride(2);
  loop.for_each_run(pool, [&](const int64_t* off, int64_t n) {
    R* __restrict o = out + off[0];
    const A* __restrict pa = a.data + off[1];
    const B* __restrict pb = b.data + off[2];
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i], pb[i]);
    } else if (sa == 1 && sb == 0) {
      const B vb = pb[0];
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i], vb);
    } else if (sa == 0 && sb == 1) {
      const A va = pa[0];
      for (int64_t i = 0; i < n; ++i) o[i] = f(va, pb[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i * sa], pb[i * sb]);
    }
  });
}

// out (contiguous, `shape`)[i] = f(a[i], b[i], c[i]).
template <typename R, typename A, typename B, typename C, typename F>
void map3(R* __restrict out, const Operand<A>& a, const Operand<B>& b, const Operand<C>& c, const Shape& shape, F f,
          vm::ThreadPool* pool = nullptr) {
  const Shape os = vm::contiguous_strides(shape);
  const Shape* const st[4] = {&os, &a.strides, &b.strides, &c.strides};
  StridedLoop<4> loop(shape, st);
  const int64_t sa = loop.inner_stride(1), sb = loop.inner_stride(2), sc = loop.inner_stride(3);
  loop.for_each_run(pool, [&](const int64_t* off, int64_t n) {
    R* __restrict o = out + off[0];
    const A* __restrict pa = a.data + off[1];
    const B* __restrict pb = b.data + off[2];
    const C* __restrict pc = c.data + off[3];
    if (sa == 1 && sb == 1 && sc == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i], pb[i], pc[i]);
    } else if (sa == 1 && sb == 0 && sc == 1) {  // where(mask, scalar, x)
      const B vb = pb[0];
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i], vb, pc[i]);
    } else if (sa == 1 && sb == 1 && sc == 0) {  // where(mask, x, scalar), masked_fill
      const C vc = pc[0];
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i], pb[i], vc);
    } else if (sa == 1 && sb == 0 && sc == 0) {  // where(mask, s1, s2)
      const B vb = pb[0];
      const C vc = pc[0];
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i], vb, vc);
    } else if (sa == 0 && sb == 1 && sc == 1) {  // a mask broadcast along the inner dim
      const A va = pa[0];
      for (int64_t i = 0; i < n; ++i) o[i] = f(va, pb[i], pc[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = f(pa[i * sa], pb[i * sb], pc[i * sc]);
    }
  });
}

// ---------------------------------------------------------------- dtypes and scalars

// A type tag: dispatch calls f(Tag<T>{}) so `typename decltype(tag)::type` is T.
template <typename T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) for the element type of `t` among f32, i64, i32, bool (i8 fails).
template <typename F>
decltype(auto) dispatch(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(Tag<float>{});
    case DType::i64: return f(Tag<int64_t>{});
    case DType::i32: return f(Tag<int32_t>{});
    case DType::boolean: return f(Tag<bool>{});
    default: break;
  }
  vm::fail("dtype {} is not supported here", vm::dtype_name(t));
}

// The numeric dtypes only (f32, i64, i32); `what` names the argument in the error.
template <typename F>
decltype(auto) dispatch_numeric(const Tensor& t, const char* what, F&& f) {
  switch (t.dtype()) {
    case DType::f32: return f(Tag<float>{});
    case DType::i64: return f(Tag<int64_t>{});
    case DType::i32: return f(Tag<int32_t>{});
    default: break;
  }
  vm::fail("{} must be f32, i64 or i32, got {}", what, t.describe());
}

// Parses a dtype name for tensors that ops create: "f32", "i64", "i32", "bool".
DType parse_value_dtype(const std::string& name, const char* what);

// Converts a scalar Value (int/float/bool) to a tensor element of dtype `dt`, following
// the operand rules: int -> f32/i64/i32 (range-checked for i32); float -> f32 only;
// bool -> bool only. `what` names the argument in errors.
// Returns the element in the low bytes of an 8-byte slot (use scalar_to<T> for typed).
void scalar_to_bytes(const Value& v, DType dt, const char* what, void* out8);

template <typename T>
T scalar_to(const Value& v, const char* what) {
  T r{};
  alignas(8) unsigned char buf[8] = {};
  scalar_to_bytes(v, vm::dtype_of<T>::value, what, buf);
  std::memcpy(&r, buf, sizeof(T));
  return r;
}

// The dtype a scalar becomes on its own: int -> i64, float -> f32, bool -> bool.
DType scalar_dtype(const Value& v);

}  // namespace ops
