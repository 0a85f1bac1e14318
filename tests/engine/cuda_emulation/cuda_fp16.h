// SPDX-License-Identifier: GPL-3.0-or-later
// Stand-in for CUDA's fp16 type under the CPU emulation: the bits, widened by core/half.h.
#pragma once

#include <cstdint>

#include "core/half.h"

struct __half {
  std::uint16_t bits;
};
inline __half __ushort_as_half(unsigned short bits) {
  return __half{bits};
}
inline float emulated_to_float(__half v) {
  return shardscope::half::f16_bits_to_float(v.bits);
}
inline float emulated_to_float(float v) {
  return v;
}
