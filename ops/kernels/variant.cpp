// One instruction-set variant of the linear kernels: CMakeLists.txt compiles this file
// once per variant with that variant's flags and -DTENSORVM_VARIANT=<namespace>
// -DTENSORVM_VARIANT_TABLE=<table> -DTENSORVM_VARIANT_NAME="<name>".
#include "ops/kernels/kernels.h"
#include "ops/kernels/linear_f32.h"
#include "ops/kernels/linear_i8.h"
#include "ops/kernels/linear_w8a8.h"

namespace ops::kernels {

extern const LinearKernels TENSORVM_VARIANT_TABLE;
const LinearKernels TENSORVM_VARIANT_TABLE = {
    TENSORVM_VARIANT_NAME,
    TENSORVM_VARIANT::dot_rows_f32,
    TENSORVM_VARIANT::gemm_rows_f32,
    TENSORVM_VARIANT::kKC * TENSORVM_VARIANT::kNR,
    TENSORVM_VARIANT::kNR,
    TENSORVM_VARIANT::dot_rows_i8,
    TENSORVM_VARIANT::dequantize_rows,
    TENSORVM_VARIANT::w8a8_blocks,
    TENSORVM_W8A8_VNNI ? "vnni" : TENSORVM_W8A8_AVX2 ? "avx2" : "generic",
};

}  // namespace ops::kernels
