#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vm {

// i8 exists for quantized weights; bool is stored one byte per element.
enum class DType : uint8_t { f32, i64, i32, boolean, i8 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::i64: return 8;
    case DType::i32: return 4;
    case DType::boolean: return 1;
    case DType::i8: return 1;
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
  }
  return "?";
}

template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::i8; };

}  // namespace vm
