// SPDX-License-Identifier: GPL-3.0-or-later
// Stand-in for CUDA's bf16 type under the CPU emulation: the bits, widened exactly.
#pragma once

#include <cstdint>
#include <cstring>

struct __nv_bfloat16 {
  std::uint16_t bits;
};
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) {
  return __nv_bfloat16{bits};
}
inline float emulated_to_float(__nv_bfloat16 v) {
  const std::uint32_t word = static_cast<std::uint32_t>(v.bits) << 16;
  float f;
  std::memcpy(&f, &word, sizeof f);
  return f;
}
