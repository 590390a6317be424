// One float vector type per instruction set, with the handful of operations the
// linear kernels need. A kernel file is written once against these and compiled once
// per variant with that variant's flags (ops/kernels/variant.cpp); the compiler's
// predefined macros pick the vector here:
//   AVX-512F     16 lanes, 32 registers, masked partial loads/stores
//   AVX2 + FMA    8 lanes, 16 registers
//   NEON          4 lanes, 32 registers (AArch64)
//   otherwise     4 lanes of portable C++ vectors (the scalar variant; the compiler maps them onto
//                 the baseline's SSE registers on x86-64, and onto scalar code on WebAssembly,
//                 whose baseline has no SIMD). WebAssembly's simd128 variant is this same code
//                 compiled with -msimd128: SIMD128 has no fused multiply-add (relaxed SIMD's
//                 may or may not fuse), so it computes the scalar variant's results bit for bit.
// fmadd is fused on the SIMD variants and a separate multiply and add on the plain
// one; the whole library is built with -ffp-contract=off, so the compiler never fuses
// on its own and each output's arithmetic is fixed by the code, not by how a loop
// happened to be vectorised or split over threads.
//
// Only this header, <cstdint>/<cstring>/<algorithm> and the intrinsics may be included
// by variant code: anything inline from elsewhere could be emitted with this variant's
// instructions and picked by the linker for the whole program (tests/cpp/
// check_variant_symbols.cmake checks the object files).
#pragma once

#include <cstdint>
#include <cstring>

// AArch64 has NEON in its baseline, so the flags cannot tell the scalar variant from the
// neon one there: TENSORVM_PLAIN_SIMD is 1 when this is the scalar variant's compilation
// (TENSORVM_VARIANT=scalar pastes into TENSORVM_PLAIN_SIMD_scalar).
#define TENSORVM_PLAIN_SIMD_scalar 1
#define TENSORVM_PLAIN_SIMD_CAT(a, b) a##b
#define TENSORVM_PLAIN_SIMD_OF(v) TENSORVM_PLAIN_SIMD_CAT(TENSORVM_PLAIN_SIMD_, v)
#if TENSORVM_PLAIN_SIMD_OF(TENSORVM_VARIANT)
#define TENSORVM_PLAIN_SIMD 1
#else
#define TENSORVM_PLAIN_SIMD 0
#endif

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#elif defined(__ARM_NEON) && defined(__aarch64__) && !TENSORVM_PLAIN_SIMD
#include <arm_neon.h>
#endif

namespace ops::kernels::TENSORVM_VARIANT {

#if defined(__AVX512F__)

struct Vf {
  __m512 v;
};
constexpr int kLanes = 16;
constexpr int kRegisters = 32;
inline __mmask16 lanes_mask(int n) { return __mmask16(n >= 16 ? 0xFFFF : (1u << n) - 1); }
inline Vf zero() { return {_mm512_setzero_ps()}; }
inline Vf set1(float a) { return {_mm512_set1_ps(a)}; }
inline Vf load(const float* p) { return {_mm512_loadu_ps(p)}; }
inline Vf load_n(const float* p, int n) { return {_mm512_maskz_loadu_ps(lanes_mask(n), p)}; }
inline void store(float* p, Vf a) { _mm512_storeu_ps(p, a.v); }
inline void store_n(float* p, Vf a, int n) { _mm512_mask_storeu_ps(p, lanes_mask(n), a.v); }
inline Vf fmadd(Vf a, Vf b, Vf c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
inline Vf add(Vf a, Vf b) { return {_mm512_add_ps(a.v, b.v)}; }
inline Vf mul(Vf a, Vf b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline Vf load_i8(const int8_t* p) {
  return {_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))))};
}
// The sum of the lanes. The maskz forms: GCC 12 warns (-Wuninitialized) about the
// _undefined_ operand inside _mm512_reduce_add_ps and the unmasked shuffles/casts.
inline float hsum(Vf a) {
  __m512 v = a.v;
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0x4E));  // + the other 256-bit half
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0xB1));  // + the neighbouring 128-bit lane
  __m128 h = _mm512_maskz_extractf32x4_ps(0xF, v, 0);
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}
inline void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
// 16 halves (vcvtph2ps) / bfloat16s (zero-extended to 32 bits, shifted up) as floats;
// the _n forms read n < 16 of them (masked: nothing past the end).
inline Vf load_f16(const uint16_t* p) { return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))}; }
inline Vf load_f16_n(const uint16_t* p, int n) { return {_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lanes_mask(n), p))}; }
inline Vf bf16_bits(__m256i h) { return {_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))}; }
inline Vf load_bf16(const uint16_t* p) { return bf16_bits(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline Vf load_bf16_n(const uint16_t* p, int n) { return bf16_bits(_mm256_maskz_loadu_epi16(lanes_mask(n), p)); }

#elif defined(__AVX2__) && defined(__FMA__)

struct Vf {
  __m256 v;
};
constexpr int kLanes = 8;
constexpr int kRegisters = 16;
inline __m256i lanes_mask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline Vf zero() { return {_mm256_setzero_ps()}; }
inline Vf set1(float a) { return {_mm256_set1_ps(a)}; }
inline Vf load(const float* p) { return {_mm256_loadu_ps(p)}; }
inline Vf load_n(const float* p, int n) { return {_mm256_maskload_ps(p, lanes_mask(n))}; }
inline void store(float* p, Vf a) { _mm256_storeu_ps(p, a.v); }
inline void store_n(float* p, Vf a, int n) { _mm256_maskstore_ps(p, lanes_mask(n), a.v); }
inline Vf fmadd(Vf a, Vf b, Vf c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
inline Vf add(Vf a, Vf b) { return {_mm256_add_ps(a.v, b.v)}; }
inline Vf mul(Vf a, Vf b) { return {_mm256_mul_ps(a.v, b.v)}; }
inline Vf load_i8(const int8_t* p) {
  return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))))};
}
inline float hsum(Vf a) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}
inline void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
// 8 halves (F16C's vcvtph2ps) / bfloat16s (zero-extended to 32 bits, shifted up) as floats.
inline Vf load_f16(const uint16_t* p) { return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))}; }
inline Vf load_bf16(const uint16_t* p) {
  return {_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16))};
}

#elif defined(__ARM_NEON) && defined(__aarch64__) && !TENSORVM_PLAIN_SIMD

struct Vf {
  float32x4_t v;
};
constexpr int kLanes = 4;
constexpr int kRegisters = 32;
inline Vf zero() { return {vdupq_n_f32(0.0f)}; }
inline Vf set1(float a) { return {vdupq_n_f32(a)}; }
inline Vf load(const float* p) { return {vld1q_f32(p)}; }
inline Vf load_n(const float* p, int n) {
  float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  std::memcpy(t, p, sizeof(float) * (n < 4 ? n : 4));
  return {vld1q_f32(t)};
}
inline void store(float* p, Vf a) { vst1q_f32(p, a.v); }
inline void store_n(float* p, Vf a, int n) {
  float t[4];
  vst1q_f32(t, a.v);
  std::memcpy(p, t, sizeof(float) * (n < 4 ? n : 4));
}
inline Vf fmadd(Vf a, Vf b, Vf c) { return {vfmaq_f32(c.v, a.v, b.v)}; }
inline Vf add(Vf a, Vf b) { return {vaddq_f32(a.v, b.v)}; }
inline Vf mul(Vf a, Vf b) { return {vmulq_f32(a.v, b.v)}; }
inline Vf load_i8(const int8_t* p) {
  int32_t four;
  std::memcpy(&four, p, 4);
  const int16x8_t h = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four)));
  return {vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)))};
}
inline float hsum(Vf a) { return vaddvq_f32(a.v); }
inline void prefetch(const void* p) { __builtin_prefetch(p); }
// 4 halves (vcvt_f32_f16) / bfloat16s (widened and shifted up by vshll) as floats.
inline Vf load_f16(const uint16_t* p) { return {vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)))}; }
inline Vf load_bf16(const uint16_t* p) { return {vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16))}; }

#else

// GCC/Clang vector extensions: plain element-wise C++ semantics (a multiply and an add,
// never fused here), which the compiler keeps in the baseline's vector registers; a struct
// of 4 floats went through memory and made this variant's GEMM 4x slower than SSE allows.
typedef float F4 __attribute__((vector_size(16)));
struct Vf {
  F4 v;
};
constexpr int kLanes = 4;
constexpr int kRegisters = 16;
inline Vf zero() { return {F4{0.0f, 0.0f, 0.0f, 0.0f}}; }
inline Vf set1(float a) { return {F4{a, a, a, a}}; }
inline Vf load(const float* p) {
  Vf r;
  std::memcpy(&r.v, p, sizeof(F4));
  return r;
}
inline Vf load_n(const float* p, int n) {
  Vf r = zero();
  std::memcpy(&r.v, p, sizeof(float) * size_t(n < 4 ? n : 4));
  return r;
}
inline void store(float* p, Vf a) { std::memcpy(p, &a.v, sizeof(F4)); }
inline void store_n(float* p, Vf a, int n) { std::memcpy(p, &a.v, sizeof(float) * size_t(n < 4 ? n : 4)); }
inline Vf fmadd(Vf a, Vf b, Vf c) { return {a.v * b.v + c.v}; }
inline Vf add(Vf a, Vf b) { return {a.v + b.v}; }
inline Vf mul(Vf a, Vf b) { return {a.v * b.v}; }
inline Vf load_i8(const int8_t* p) {
  typedef int32_t I4 __attribute__((vector_size(16)));
  const I4 q = {p[0], p[1], p[2], p[3]};
  return {__builtin_convertvector(q, F4)};
}
inline float hsum(Vf a) { return (a.v[0] + a.v[2]) + (a.v[1] + a.v[3]); }
inline void prefetch(const void* p) { __builtin_prefetch(p); }
// 4 halves as floats without branches (core/half.h's f16_to_f32, lane-wise): the
// exponent and mantissa move to f32's places and the exponent is rebiased; inf/NaN get
// the rest of the bias; subnormals (exponent 0) are made normal by one exact subtraction
// of 2^-14 (no f32 subnormal is involved, so DAZ/FTZ cannot change them).
inline Vf load_f16(const uint16_t* p) {
  typedef uint32_t U4 __attribute__((vector_size(16)));
  const U4 h = {p[0], p[1], p[2], p[3]};
  const U4 em = (h & 0x7fffu) << 13, e = em & (0x1fu << 23);
  U4 o = em + (112u << 23);
  o = e == (0x1fu << 23) ? o + (112u << 23) : o;  // inf, NaN: exponent 255
  F4 sub, norm, magic;
  const U4 so = o + (1u << 23), mb = {113u << 23, 113u << 23, 113u << 23, 113u << 23};
  std::memcpy(&sub, &so, 16);
  std::memcpy(&magic, &mb, 16);
  std::memcpy(&norm, &o, 16);
  sub = sub - magic;
  U4 bits, sb;
  std::memcpy(&bits, &norm, 16);
  std::memcpy(&sb, &sub, 16);
  bits = e == 0 ? sb : bits;
  bits |= (h & 0x8000u) << 16;
  Vf r;
  std::memcpy(&r.v, &bits, 16);
  return r;
}
// 4 bfloat16s as floats: the 16 bits shifted up.
inline Vf load_bf16(const uint16_t* p) {
  typedef uint32_t U4 __attribute__((vector_size(16)));
  const U4 bits = U4{p[0], p[1], p[2], p[3]} << 16;
  Vf r;
  std::memcpy(&r.v, &bits, 16);
  return r;
}

#endif

#if !defined(__AVX512F__)
// n < kLanes halves / bfloat16s as floats, zeros past n (AVX-512 masks its loads).
inline Vf load_f16_n(const uint16_t* p, int n) {
  uint16_t t[kLanes] = {};
  std::memcpy(t, p, sizeof(uint16_t) * size_t(n < kLanes ? n : kLanes));
  return load_f16(t);
}
inline Vf load_bf16_n(const uint16_t* p, int n) {
  uint16_t t[kLanes] = {};
  std::memcpy(t, p, sizeof(uint16_t) * size_t(n < kLanes ? n : kLanes));
  return load_bf16(t);
}
#endif

// n < kLanes int8 values as floats, zeros past n.
inline Vf load_i8_n(const int8_t* p, int n) {
  int8_t t[kLanes] = {};
  std::memcpy(t, p, size_t(n < kLanes ? n : kLanes));
  return load_i8(t);
}

}  // namespace ops::kernels::TENSORVM_VARIANT
