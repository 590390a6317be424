// Matrix products. Eigen does the GEMM; weights stay in their stored [out, in]
// layout (a row-major [out, in] matrix is a column-major [in, out] one, so x @ W^T
// needs no transpose copy).
#include <Eigen/Core>

#include "ops/registry.h"

namespace ops {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;
using RowMap = Eigen::Map<RowMatrix>;

// linear(x, weight, bias=None): x[..., in] @ weight[out, in]^T + bias[out]
static void linear(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Tensor& w = a.tensor(1);
  const Tensor* b = a.opt_tensor(2);
  if (x.dtype() != DType::f32 || w.dtype() != DType::f32) vm::fail("x and weight must be f32, got {} and {}", x.describe(), w.describe());
  if (x.ndim() < 1) vm::fail("x must have at least 1 dimension, got {}", x.describe());
  if (w.ndim() != 2) vm::fail("weight must be 2-D [out, in], got {}", w.describe());
  const int64_t in = x.size(-1), outf = w.size(0);
  if (w.size(1) != in) vm::fail("x has {} features but weight is {}", in, w.describe());
  if (b && (b->dtype() != DType::f32 || b->ndim() != 1 || b->size(0) != outf))
    vm::fail("bias must be f32[{}], got {}", outf, b->describe());
  Shape os = x.shape();
  os[os.size() - 1] = outf;
  Tensor y = ctx.empty(DType::f32, os);
  const int64_t rows = Shape(x.shape().begin(), x.shape().end() - 1).numel();
  RowMap Y(y.data<float>(), rows, outf);
  if (in == 0) {
    Y.setZero();  // an empty sum
  } else if (rows > 0 && outf > 0) {
    Y.noalias() = ConstRowMap(x.data<float>(), rows, in) * ConstRowMap(w.data<float>(), outf, in).transpose();
  }
  if (b) Y.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(b->data<float>(), outf);
  out[0] = std::move(y);
}

void register_linalg_ops(Registry& r) {
  auto& op = r.add("linear", "linear algebra");
  op.params = {p_tensor("x"), p_tensor("weight"), p_opt_tensor("bias")};
  op.outputs = {"Tensor"};
  op.doc = "x[..., in] @ weight[out, in]^T + bias[out] (f32). Weights keep the PyTorch [out, in] layout.";
  op.kernel = linear;
}

}  // namespace ops
