// SPDX-License-Identifier: GPL-3.0-or-later
// Array conversions and the inf/NaN scan. The loops are branch-free per element
// (the scalar conversions are written as selects), so GCC vectorizes them at -O3.
// GCC keeps the f32 additions of the f16 conversions behind branches while FP
// exceptions count (-ftrapping-math, the default), which blocks vectorizing;
// nothing here reads the FP flags, and the results are the same either way.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "core/half.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace shardscope::half {

void f32_to_f16(const float* in, std::uint16_t* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = float_to_f16_bits(in[i]);
}

void f16_to_f32(const std::uint16_t* in, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = f16_bits_to_float(in[i]);
}

void f32_to_bf16(const float* in, std::uint16_t* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = float_to_bf16_bits(in[i]);
}

void bf16_to_f32(const std::uint16_t* in, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = bf16_bits_to_float(in[i]);
}

namespace {

// Scans fixed chunks with no early exit inside a chunk (an OR of the
// all-ones-exponent flags vectorizes; a loop that returns early does not), and
// searches a chunk element by element only once its flag is set.
constexpr std::int64_t kChunk = 4096;

template <typename T, typename IsBad>
std::int64_t first_bad(const T* values, std::int64_t n, IsBad is_bad) {
  for (std::int64_t begin = 0; begin < n; begin += kChunk) {
    const std::int64_t end = begin + kChunk < n ? begin + kChunk : n;
    unsigned any = 0;
    for (std::int64_t i = begin; i < end; ++i) any |= is_bad(values[i]) ? 1u : 0u;
    if (any == 0) continue;
    for (std::int64_t i = begin; i < end; ++i)
      if (is_bad(values[i])) return i;
  }
  return -1;
}

}  // namespace

std::int64_t first_non_finite(const float* values, std::int64_t n) {
  return first_bad(values, n, [](float v) { return !float_is_finite(v); });
}

std::int64_t first_non_finite_f16(const std::uint16_t* values, std::int64_t n) {
  return first_bad(values, n, [](std::uint16_t v) { return !f16_bits_is_finite(v); });
}

std::int64_t first_non_finite_bf16(const std::uint16_t* values, std::int64_t n) {
  return first_bad(values, n, [](std::uint16_t v) { return !bf16_bits_is_finite(v); });
}

namespace {
void require_16_bit(DType dtype) {
  if (dtype != DType::f16 && dtype != DType::bf16)
    throw std::invalid_argument("16-bit storage must be f16 or bf16, not " + std::string(dtype_name(dtype)));
}
}  // namespace

void widen(DType dtype, const std::uint16_t* in, float* out, std::int64_t n) {
  require_16_bit(dtype);
  if (dtype == DType::f16) f16_to_f32(in, out, n);
  else bf16_to_f32(in, out, n);
}

void narrow(DType dtype, const float* in, std::uint16_t* out, std::int64_t n) {
  require_16_bit(dtype);
  if (dtype == DType::f16) f32_to_f16(in, out, n);
  else f32_to_bf16(in, out, n);
}

std::int64_t first_non_finite(DType dtype, const std::uint16_t* values, std::int64_t n) {
  require_16_bit(dtype);
  return dtype == DType::f16 ? first_non_finite_f16(values, n) : first_non_finite_bf16(values, n);
}

double sum_of_squares(DType dtype, const std::uint16_t* values, std::int64_t n) {
  require_16_bit(dtype);
  // Blocks of f32 partial sums (vectorized), added up in double.
  constexpr std::int64_t kBlock = 1024;
  double total = 0.0;
  float wide[kBlock];
  for (std::int64_t begin = 0; begin < n; begin += kBlock) {
    const std::int64_t len = std::min(kBlock, n - begin);
    widen(dtype, values + begin, wide, len);
    double block = 0.0;
    for (std::int64_t i = 0; i < len; ++i) block += static_cast<double>(wide[i]) * wide[i];
    total += block;
  }
  return total;
}

void add_into(DType dtype, std::uint16_t* dst, const std::uint16_t* src, std::int64_t n) {
  require_16_bit(dtype);
  if (dtype == DType::f16) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = float_to_f16_bits(f16_bits_to_float(dst[i]) + f16_bits_to_float(src[i]));
  } else {
    for (std::int64_t i = 0; i < n; ++i)
      dst[i] = float_to_bf16_bits(bf16_bits_to_float(dst[i]) + bf16_bits_to_float(src[i]));
  }
}

void divide(DType dtype, std::uint16_t* x, std::int64_t n, float divisor) {
  require_16_bit(dtype);
  if (dtype == DType::f16) {
    for (std::int64_t i = 0; i < n; ++i) x[i] = float_to_f16_bits(f16_bits_to_float(x[i]) / divisor);
  } else {
    for (std::int64_t i = 0; i < n; ++i) x[i] = float_to_bf16_bits(bf16_bits_to_float(x[i]) / divisor);
  }
}

void accumulate(DType dtype, std::uint16_t* dst, const float* src, std::int64_t n) {
  require_16_bit(dtype);
  if (dtype == DType::f16) {
    for (std::int64_t i = 0; i < n; ++i)
      dst[i] = float_to_f16_bits(f16_bits_to_float(dst[i]) + f16_bits_to_float(float_to_f16_bits(src[i])));
  } else {
    for (std::int64_t i = 0; i < n; ++i)
      dst[i] = float_to_bf16_bits(bf16_bits_to_float(dst[i]) + bf16_bits_to_float(float_to_bf16_bits(src[i])));
  }
}

}  // namespace shardscope::half
