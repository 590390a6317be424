// Shape ops: views where they are free (reshape, unsqueeze, squeeze, slice of rows),
// contiguous copies otherwise (transpose, permute, expand, strided slices), plus
// concat, repeat_interleave and the shape queries size, shape and numel.
#include <cstdint>
#include <cstring>

#include "ops/broadcast.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace ops {

namespace {

// Normalises a possibly negative dim for a tensor of `nd` dims.
int norm_dim(int64_t dim, int nd, const Tensor& x, const char* what = "dim") {
  if (dim < -nd || dim >= nd) {
    if (nd == 0) vm::fail("{} {} out of range: x is 0-d ({})", what, dim, x.describe());
    vm::fail("{} {} out of range [{}, {}] for x {}", what, dim, -nd, nd - 1, x.describe());
  }
  return int(dim < 0 ? dim + nd : dim);
}

std::string ints_str(const Ints& s) { return Shape(s.begin(), s.end()).str(); }

template <typename T>
void copy_strided(const T* src, T* dst, const int64_t* shape, const int64_t* st, int nd) {
  const int64_t inner = shape[nd - 1], is = st[nd - 1];
  int64_t outer = 1;
  for (int i = 0; i < nd - 1; ++i) outer *= shape[i];
  int64_t idx[vm::kMaxDims] = {};
  int64_t off = 0;
  for (int64_t o = 0; o < outer; ++o) {
    const T* s = src + off;
    if (is == 1) {
      std::memcpy(dst, s, size_t(inner) * sizeof(T));
    } else {
      for (int64_t j = 0; j < inner; ++j) dst[j] = s[j * is];
    }
    dst += inner;
    for (int d = nd - 2; d >= 0; --d) {
      off += st[d];
      if (++idx[d] < shape[d]) break;
      off -= st[d] * shape[d];
      idx[d] = 0;
    }
  }
}

// A contiguous copy of a view with any strides (0 for broadcast dims).
Tensor materialize(const Tensor& view, OpContext& ctx) {
  Tensor out = ctx.empty(view.dtype(), view.shape());
  if (out.numel() == 0) return out;
  // Drop size-1 dims and merge dims that are contiguous with each other.
  int64_t sh[vm::kMaxDims], st[vm::kMaxDims];
  int nd = 0;
  for (int i = 0; i < view.ndim(); ++i) {
    const int64_t n = view.shape()[i], s = view.strides()[i];
    if (n == 1) continue;
    if (nd > 0 && st[nd - 1] == s * n) {
      sh[nd - 1] *= n;
      st[nd - 1] = s;
    } else {
      sh[nd] = n;
      st[nd] = s;
      ++nd;
    }
  }
  if (nd == 0) {
    sh[0] = 1;
    st[0] = 1;
    nd = 1;
  }
  switch (vm::dtype_size(view.dtype())) {
    case 1: copy_strided(static_cast<const uint8_t*>(view.raw()), static_cast<uint8_t*>(out.raw()), sh, st, nd); break;
    case 2: copy_strided(static_cast<const uint16_t*>(view.raw()), static_cast<uint16_t*>(out.raw()), sh, st, nd); break;
    case 4:
      if (view.dtype() == DType::f32)
        copy_strided(view.data<float>(), out.data<float>(), sh, st, nd);
      else
        copy_strided(view.data<int32_t>(), out.data<int32_t>(), sh, st, nd);
      break;
    default: copy_strided(view.data<int64_t>(), out.data<int64_t>(), sh, st, nd); break;
  }
  return out;
}

// The contiguous copy of x with its dims permuted (perm already validated).
Tensor permuted(const Tensor& x, const int* perm, OpContext& ctx) {
  Shape sh, st;
  for (int i = 0; i < x.ndim(); ++i) {
    sh.push_back(x.shape()[perm[i]]);
    st.push_back(x.strides()[perm[i]]);
  }
  return materialize(x.view(sh, st, x.offset()), ctx);
}

}  // namespace

// reshape(x, shape): zero-copy; one dim may be -1.
static void reshape(OpContext&, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Ints s = a.ints(1);
  Shape ns;
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) vm::fail("only one dim of shape may be -1, got {}", ints_str(s));
      infer = i;
    } else if (s[i] < 0) {
      vm::fail("shape {} has a negative dim", ints_str(s));
    } else if (__builtin_mul_overflow(known, s[i], &known)) {
      vm::fail("shape {} has more elements than fit in an int64", ints_str(s));
    }
    ns.push_back(s[i]);
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0)
      vm::fail("cannot reshape x {} ({} elements) to {}", x.describe(), x.numel(), ints_str(s));
    ns[infer] = x.numel() / known;
  }
  if (ns.numel() != x.numel()) vm::fail("cannot reshape x {} ({} elements) to {}", x.describe(), x.numel(), ints_str(s));
  out[0] = x.reshape(ns);
}

// transpose(x, dim0, dim1): a contiguous copy with two dims swapped.
static void transpose(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const int d0 = norm_dim(a.i64(1), x.ndim(), x, "dim0");
  const int d1 = norm_dim(a.i64(2), x.ndim(), x, "dim1");
  int perm[vm::kMaxDims];
  for (int i = 0; i < x.ndim(); ++i) perm[i] = i;
  perm[d0] = d1;
  perm[d1] = d0;
  out[0] = permuted(x, perm, ctx);
}

// permute(x, dims): a contiguous copy with dims reordered; out.shape[i] = x.shape[dims[i]].
static void permute(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Ints dims = a.ints(1);
  if (dims.size() != x.ndim()) vm::fail("dims {} must list each of the {} dims of x {} once", ints_str(dims), x.ndim(), x.describe());
  int perm[vm::kMaxDims];
  bool seen[vm::kMaxDims] = {};
  for (int i = 0; i < dims.size(); ++i) {
    perm[i] = norm_dim(dims[i], x.ndim(), x);
    if (seen[perm[i]]) vm::fail("dims {} must list each of the {} dims of x {} once", ints_str(dims), x.ndim(), x.describe());
    seen[perm[i]] = true;
  }
  out[0] = permuted(x, perm, ctx);
}

// concat(*tensors, dim=0)
static void concat(OpContext& ctx, const Args& a, Value* out) {
  const int n = a.variadic_count();
  const int first = a.op().num_fixed();
  if (n == 0) vm::fail("needs at least one tensor");
  const Tensor& t0 = a.tensor(first);
  if (t0.ndim() == 0) vm::fail("cannot concat 0-d tensors, got {}", t0.describe());
  const int dim = norm_dim(a.i64(0), t0.ndim(), t0);
  int64_t total = 0;
  for (int k = 0; k < n; ++k) {
    const Tensor& t = a.tensor(first + k);
    if (t.dtype() != t0.dtype()) vm::fail("tensors must have the same dtype, got {} (tensors[0]) and {} (tensors[{}])", t0.describe(), t.describe(), k);
    bool ok = t.ndim() == t0.ndim();
    for (int d = 0; ok && d < t.ndim(); ++d) ok = d == dim || t.shape()[d] == t0.shape()[d];
    if (!ok)
      vm::fail("tensors must match in every dim but {}, got {} (tensors[0]) and {} (tensors[{}])", dim, t0.describe(), t.describe(), k);
    total += t.shape()[dim];
  }
  Shape os = t0.shape();
  os[dim] = total;
  Tensor y = ctx.empty(t0.dtype(), os);
  const size_t es = vm::dtype_size(t0.dtype());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= os[d];
  for (int d = dim + 1; d < os.size(); ++d) inner *= os[d];
  const size_t out_row = size_t(total * inner) * es;
  char* dst = static_cast<char*>(y.raw());
  size_t prefix = 0;
  for (int k = 0; k < n; ++k) {
    const Tensor& t = a.tensor(first + k);
    const size_t chunk = size_t(t.shape()[dim] * inner) * es;
    const char* src = static_cast<const char*>(t.raw());
    if (chunk > 0)
      for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + size_t(o) * out_row + prefix, src + size_t(o) * chunk, chunk);
    prefix += chunk;
  }
  out[0] = std::move(y);
}

// slice(x, dim, start=None, end=None, step=1), Python slicing semantics.
static void slice(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const int dim = norm_dim(a.i64(1), x.ndim(), x);
  const int64_t step = a.i64(4);
  if (step < 1) vm::fail("step must be >= 1, got {}", step);
  const int64_t n = x.shape()[dim];
  auto clamp = [n](int64_t i) {
    if (i < 0) i += n;
    return i < 0 ? 0 : (i > n ? n : i);
  };
  const int64_t start = a.is_none(2) ? 0 : clamp(a.i64(2));
  const int64_t end = a.is_none(3) ? n : clamp(a.i64(3));
  const int64_t len = end > start ? (end - start - 1) / step + 1 : 0;
  if (dim == 0 && step == 1) {
    out[0] = x.slice0(start, start + len);
    return;
  }
  Shape sh = x.shape(), st = x.strides();
  sh[dim] = len;
  if (len > 1) st[dim] *= step;  // (a huge step selects one element: no overflow)
  out[0] = materialize(x.view(sh, st, x.offset() + start * x.strides()[dim]), ctx);
}

// unsqueeze(x, dim): a new size-1 dim at `dim` (in [-ndim-1, ndim]); zero-copy.
static void unsqueeze(OpContext&, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const int64_t d = a.i64(1);
  const int nd = x.ndim();
  if (d < -nd - 1 || d > nd) vm::fail("dim {} out of range [{}, {}] for x {}", d, -nd - 1, nd, x.describe());
  if (nd == vm::kMaxDims) vm::fail("x {} already has the maximum of {} dims", x.describe(), vm::kMaxDims);
  const int at = int(d < 0 ? d + nd + 1 : d);
  Shape s;
  for (int i = 0; i < nd; ++i) {
    if (i == at) s.push_back(1);
    s.push_back(x.shape()[i]);
  }
  if (at == nd) s.push_back(1);
  out[0] = x.reshape(s);
}

// squeeze(x, dim): removes `dim`, which must have size 1; zero-copy.
static void squeeze(OpContext&, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const int dim = norm_dim(a.i64(1), x.ndim(), x);
  if (x.shape()[dim] != 1) vm::fail("dim {} of x {} has size {}, not 1", dim, x.describe(), x.shape()[dim]);
  Shape s;
  for (int i = 0; i < x.ndim(); ++i)
    if (i != dim) s.push_back(x.shape()[i]);
  out[0] = x.reshape(s);
}

// expand(x, shape): broadcast x to `shape` (-1 keeps a dim of x); a contiguous copy.
static void expand(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  out[0] = materialize(ops::expand(x, a.ints(1).shape()), ctx);
}

static void size(OpContext&, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  out[0] = Value::from_int(x.shape()[norm_dim(a.i64(1), x.ndim(), x)]);
}

static void shape(OpContext&, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  Ints s;
  for (int64_t d : x.shape()) s.push_back(d);
  out[0] = Value::from_ints(s);
}

static void numel(OpContext&, const Args& a, Value* out) { out[0] = Value::from_int(a.tensor(0).numel()); }

// repeat_interleave(x, repeats, dim): each slice along dim repeated `repeats` times in place.
static void repeat_interleave(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const int64_t reps = a.i64(1);
  const int dim = norm_dim(a.i64(2), x.ndim(), x);
  if (reps < 0) vm::fail("repeats must be >= 0, got {}", reps);
  if (reps > 0 && x.shape()[dim] > INT64_MAX / reps) vm::fail("repeats {} is too large for x {}", reps, x.describe());
  Shape os = x.shape();
  os[dim] *= reps;
  Tensor y = ctx.empty(x.dtype(), os);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= os[d];
  for (int d = dim + 1; d < os.size(); ++d) inner *= os[d];
  const size_t chunk = size_t(inner) * vm::dtype_size(x.dtype());
  const int64_t n = x.shape()[dim];
  if (y.numel() > 0) {
    const char* src = static_cast<const char*>(x.raw());
    char* dst = static_cast<char*>(y.raw());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < n; ++i, src += chunk)
        for (int64_t r = 0; r < reps; ++r, dst += chunk) std::memcpy(dst, src, chunk);
  }
  out[0] = std::move(y);
}

void register_shape_ops(Registry& r) {
  r.add(TENSORVM_OP("reshape", reshape), "shape", {p_tensor("x"), p_ints("shape")}, {"Tensor"},
        "x with a new shape of the same number of elements; one dim may be -1 (inferred). Zero-copy (a strided x is "
        "made contiguous first). Any dtype.");
  r.add(TENSORVM_OP("transpose", transpose), "shape", {p_tensor("x"), p_int("dim0"), p_int("dim1")}, {"Tensor"},
        "A contiguous copy of x with dims dim0 and dim1 swapped (negative dims count from the end). Any dtype.");
  r.add(TENSORVM_OP("permute", permute), "shape", {p_tensor("x"), p_ints("dims")}, {"Tensor"},
        "A contiguous copy of x with its dims reordered: out.shape[i] = x.shape[dims[i]] (negative dims allowed). Any dtype.");
  {
    Param ts = p_tensor("tensors");
    ts.variadic = true;
    r.add(TENSORVM_OP("concat", concat), "shape", {ts, p_int("dim", 0)}, {"Tensor"},
          "Joins tensors of one dtype along dim (keyword); every other dim must match. Zero-size inputs are allowed.");
  }
  r.add(TENSORVM_OP("slice", slice), "shape",
        {p_tensor("x"), p_int("dim"), p_opt_int("start"), p_opt_int("end"), p_int("step", 1)}, {"Tensor"},
        "x[start:end:step] along dim with Python slicing rules (negative and out-of-range bounds clamp, None is the "
        "open end, step >= 1). Zero-copy for dim 0 with step 1, else a contiguous copy.");
  r.add(TENSORVM_OP("unsqueeze", unsqueeze), "shape", {p_tensor("x"), p_int("dim")}, {"Tensor"},
        "x with a new size-1 dim inserted at dim (in [-ndim-1, ndim]). Zero-copy.");
  r.add(TENSORVM_OP("squeeze", squeeze), "shape",
        {p_tensor("x"), p_int("dim")}, {"Tensor"}, "x without dim, which must have size 1. Zero-copy.");
  r.add(TENSORVM_OP("expand", expand), "shape", {p_tensor("x"), p_ints("shape")}, {"Tensor"},
        "x broadcast to shape (numpy rules: size-1 dims stretch, new leading dims; -1 keeps a dim of x). A contiguous copy.");
  r.add(TENSORVM_OP("repeat_interleave", repeat_interleave), "shape",
        {p_tensor("x"), p_int("repeats"), p_int("dim")}, {"Tensor"},
        "Each slice of x along dim repeated `repeats` times in a row (torch.repeat_interleave with an int), e.g. encoder "
        "outputs [B, S, D] -> [B*beams, S, D]. Any dtype.");
  // Shape queries read only the metadata, so strided views need no copy.
  Param x = p_tensor("x");
  x.strided_ok = true;
  r.add(TENSORVM_OP("size", size), "shape",
        {x, p_int("dim")}, {"int"}, "The size of dim of x (negative dims count from the end).");
  r.add(TENSORVM_OP("shape", shape), "shape", {x}, {"ints"}, "The shape of x as an int list.");
  r.add(TENSORVM_OP("numel", numel), "shape", {x}, {"int"}, "The number of elements of x.");
}

}  // namespace ops
