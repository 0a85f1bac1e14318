// SPDX-License-Identifier: GPL-3.0-or-later
// 16-bit floating-point storage for mixed precision: IEEE 754 binary16 (f16)
// and bfloat16 (bf16), converted to and from f32 with round-to-nearest-even.
//
// f16 (1 sign, 5 exponent bits with bias 15, 10 mantissa bits):
//   - finite values round to nearest, ties to even;
//   - |x| >= 65520 (= 65504 + half an ulp, the tie rounds away to the even inf)
//     becomes +-inf; +-inf stays +-inf;
//   - results below 2^-14 are subnormals (multiples of 2^-24, gradual
//     underflow); |x| <= 2^-25 (half the smallest subnormal, a tie to the even
//     0) becomes +-0;
//   - NaN stays NaN with its sign, made quiet (mantissa bit 9 set) and keeping
//     the top 9 bits of its payload, as x86 F16C's vcvtps2ph does.
// bf16 is the upper half of an f32: rounding adds 0x7FFF plus the lowest kept
// bit to the f32 bits (ties to even; the carry may reach the exponent, and
// values past the largest bf16 become inf). NaN is handled first so it can
// never round into inf: it keeps its sign and top payload bits and is made
// quiet (bit 6), as Intel's vcvtneps2bf16 does.
// Widening (f16 or bf16 to f32) is exact for every bit pattern.
//
// The scalar functions are callable from host and device code (SS_HD, which
// ops/math.h uses too). The array functions (half.cpp) are host loops written to vectorize.
#pragma once

#include <cstdint>

#include "core/dtype.h"

#ifndef SS_HD
#if defined(__CUDACC__)
#define SS_HD __host__ __device__ __forceinline__
#else
#define SS_HD inline
#endif
#endif

namespace shardscope::half {

// Storage types: the raw bits, so they are trivially copyable and pack two per 4 bytes.
struct f16 {
  std::uint16_t bits;
};
struct bf16 {
  std::uint16_t bits;
};

SS_HD std::uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  return u;
#endif
}

SS_HD float bits_to_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// ---- f16 ----------------------------------------------------------------------

// Every case is computed and one is selected, with no branches, so array loops
// over these vectorize.
SS_HD std::uint16_t float_to_f16_bits(float f) {
  const std::uint32_t x = float_to_bits(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t ax = x & 0x7FFFFFFFu;
  // >= 2^-14, normal: rebias the exponent (127 -> 15) and round 23 -> 10
  // mantissa bits (add 0xFFF plus the lowest kept bit); a carry into the
  // exponent is correct, and 65504 < |x| < 65520 still rounds to 0x7BFF.
  const std::uint32_t normal = (ax - (112u << 23) + 0xFFFu + ((ax >> 13) & 1u)) >> 13;
  // < 2^-14, subnormal or zero: |x| + 0.5 lies in [0.5, 1), where the f32 ulp
  // is 2^-24, the f16 subnormal unit, so the f32 addition (round to nearest
  // even) rounds |x| to a multiple of 2^-24; the count is the mantissa. It
  // reaches 0x400 (the smallest normal) exactly when |x| rounds up to 2^-14,
  // and is 0 for |x| <= 2^-25 (the tie goes to the even 0).
  const std::uint32_t subnormal = float_to_bits(bits_to_float(ax) + 0.5f) - 0x3F000000u;
  // >= 65520: inf; NaN: quiet, with its top payload bits.
  const std::uint32_t special = ax > 0x7F800000u ? (0x7E00u | ((ax >> 13) & 0x3FFu)) : 0x7C00u;
  std::uint32_t r = ax < 0x38800000u ? subnormal : normal;
  r = ax >= 0x477FF000u ? special : r;
  return static_cast<std::uint16_t>(sign | r);
}

SS_HD float f16_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  const std::uint32_t mant = h & 0x3FFu;
  const std::uint32_t normal = ((exp + 112u) << 23) | (mant << 13);
  const std::uint32_t special = 0x7F800000u | (mant << 13);  // inf, NaN (payload kept)
  // Zero or subnormal: mant * 2^-24, exact in f32 (a normal f32 for mant > 0).
  const std::uint32_t subnormal = float_to_bits(static_cast<float>(mant) * 5.9604644775390625e-8f);
  std::uint32_t r = exp == 0 ? subnormal : normal;
  r = exp == 0x1Fu ? special : r;
  return bits_to_float(sign | r);
}

SS_HD bool f16_bits_is_finite(std::uint16_t h) { return (h & 0x7C00u) != 0x7C00u; }
SS_HD bool f16_bits_is_nan(std::uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }

// ---- bf16 ---------------------------------------------------------------------

SS_HD std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t x = float_to_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  const std::uint32_t rounded = x + 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

SS_HD float bf16_bits_to_float(std::uint16_t b) { return bits_to_float(static_cast<std::uint32_t>(b) << 16); }

SS_HD bool bf16_bits_is_finite(std::uint16_t b) { return (b & 0x7F80u) != 0x7F80u; }
SS_HD bool bf16_bits_is_nan(std::uint16_t b) { return (b & 0x7F80u) == 0x7F80u && (b & 0x7Fu) != 0; }

// ---- typed wrappers -------------------------------------------------------------

SS_HD f16 to_f16(float f) { return f16{float_to_f16_bits(f)}; }
SS_HD bf16 to_bf16(float f) { return bf16{float_to_bf16_bits(f)}; }
SS_HD float to_float(f16 h) { return f16_bits_to_float(h.bits); }
SS_HD float to_float(bf16 b) { return bf16_bits_to_float(b.bits); }

SS_HD bool float_is_finite(float f) { return (float_to_bits(f) & 0x7F800000u) != 0x7F800000u; }

// ---- arrays (host, half.cpp) ------------------------------------------------------
// n elements each; n <= 0 does nothing. Source and destination must not overlap.

void f32_to_f16(const float* in, std::uint16_t* out, std::int64_t n);
void f16_to_f32(const std::uint16_t* in, float* out, std::int64_t n);
void f32_to_bf16(const float* in, std::uint16_t* out, std::int64_t n);
void bf16_to_f32(const std::uint16_t* in, float* out, std::int64_t n);

// The index of the first inf or NaN, or -1 when all n values are finite. The
// loss scaler's overflow check: the index says where inf/nan was first seen.
std::int64_t first_non_finite(const float* values, std::int64_t n);
std::int64_t first_non_finite_f16(const std::uint16_t* values, std::int64_t n);
std::int64_t first_non_finite_bf16(const std::uint16_t* values, std::int64_t n);

// The same, for a 16-bit storage type chosen at run time (dtype f16 or bf16;
// std::invalid_argument otherwise).
void widen(DType dtype, const std::uint16_t* in, float* out, std::int64_t n);
void narrow(DType dtype, const float* in, std::uint16_t* out, std::int64_t n);
std::int64_t first_non_finite(DType dtype, const std::uint16_t* values, std::int64_t n);
// Sum of squares of the widened values, accumulated in double.
double sum_of_squares(DType dtype, const std::uint16_t* values, std::int64_t n);
// dst[i] = narrow(widen(dst[i]) + widen(src[i])): accumulating into 16-bit storage.
void add_into(DType dtype, std::uint16_t* dst, const std::uint16_t* src, std::int64_t n);
// dst[i] = narrow(widen(dst[i]) + widen(narrow(src[i]))): an fp32 gradient rounded
// to 16 bits, then added to 16-bit storage (add_into of its narrowed copy, in one pass).
void accumulate(DType dtype, std::uint16_t* dst, const float* src, std::int64_t n);
// x[i] = narrow(widen(x[i]) / divisor): an average's division in 16-bit storage.
void divide(DType dtype, std::uint16_t* x, std::int64_t n, float divisor);

}  // namespace shardscope::half
