// One instruction-set variant of the hot kernels: CMakeLists.txt compiles this file
// once per variant with that variant's flags and -DTENSORVM_VARIANT=<namespace>
// -DTENSORVM_VARIANT_TABLE=<table> -DTENSORVM_VARIANT_NAME="<name>".
#include "ops/kernels/attention.h"
#include "ops/kernels/kernels.h"
#include "ops/kernels/linear_f32.h"
#include "ops/kernels/linear_i4.h"
#include "ops/kernels/linear_i8.h"
#include "ops/kernels/linear_w8a8.h"
#include "ops/kernels/softmax.h"

// As in ops/reduce.cpp: elementwise_math.h's vector values have another ABI without
// AVX-512, which GCC notes where the templates are emitted; they never cross an ABI.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace ops::kernels {

extern const KernelTable TENSORVM_VARIANT_TABLE;
const KernelTable TENSORVM_VARIANT_TABLE = {
    TENSORVM_VARIANT_NAME,
    TENSORVM_VARIANT::dot_rows_f32,
    TENSORVM_VARIANT::gemm_rows_f32,
    TENSORVM_VARIANT::kKC * TENSORVM_VARIANT::kNR,
    TENSORVM_VARIANT::kNR,
    TENSORVM_VARIANT::dot_rows_i8,
    TENSORVM_VARIANT::dequantize_rows,
    TENSORVM_VARIANT::w8a8_blocks,
    TENSORVM_W8A8_VNNI ? "vnni" : TENSORVM_W8A8_AVX2 ? "avx2" : "generic",
    TENSORVM_VARIANT::dot_rows_i4,
    TENSORVM_VARIANT::dequantize_rows_i4,
    TENSORVM_VARIANT::w4a8_rows,
    TENSORVM_W4A8_NAME,
    TENSORVM_VARIANT::softmax_rows,
    TENSORVM_VARIANT::exp_map,
    TENSORVM_VARIANT::dot_rows_f16,
    TENSORVM_VARIANT::dot_rows_bf16,
    TENSORVM_VARIANT::widen_f16,
    TENSORVM_VARIANT::widen_bf16,
    TENSORVM_VARIANT::weighted_rows_f32,
    TENSORVM_VARIANT::pack_keys_f32,
    TENSORVM_VARIANT::pack_values_f32,
    TENSORVM_VARIANT::attention_rows_f32,
    TENSORVM_VARIANT::kAttentionBlockedRows,
};

}  // namespace ops::kernels
