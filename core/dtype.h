#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vm {

// i8 exists for quantized weights; bool is stored one byte per element. f16 (IEEE half)
// and bf16 (the top half of an f32) exist for 16-bit weights: they are stored, cast
// and widened to f32 inside the kernels that take them (core/half.h), not computed in.
enum class DType : uint8_t { f32, i64, i32, boolean, i8, f16, bf16 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::i64: return 8;
    case DType::i32: return 4;
    case DType::boolean: return 1;
    case DType::i8: return 1;
    case DType::f16: return 2;
    case DType::bf16: return 2;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::i64: return "i64";
    case DType::i32: return "i32";
    case DType::boolean: return "bool";
    case DType::i8: return "i8";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

// The element types of f16 and bf16 tensors: the 16 bits as stored, distinct types so
// that data<half>() cannot read a bf16 tensor (core/half.h converts them).
struct half {
  uint16_t bits;
};
struct bfloat16 {
  uint16_t bits;
};

template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<half> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::bf16; };

}  // namespace vm
