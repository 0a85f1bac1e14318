// SPDX-License-Identifier: GPL-3.0-or-later
// The element types the emulation's stand-ins read and write (cuBLAS's and
// NCCL's): fp32, fp16 and bf16 by cudaDataType_t, with core/half.h's rounding
// to nearest even.
#pragma once

#include <cstdint>

#include "core/half.h"
#include "cuda_runtime.h"

namespace cuda_emulation {

inline std::int64_t element_bytes(cudaDataType_t type) {
  return type == CUDA_R_32F ? 4 : 2;
}

inline float load(const void* p, std::int64_t i, cudaDataType_t type) {
  namespace h = shardscope::half;
  if (type == CUDA_R_32F) return static_cast<const float*>(p)[i];
  const std::uint16_t bits = static_cast<const std::uint16_t*>(p)[i];
  return type == CUDA_R_16F ? h::f16_bits_to_float(bits) : h::bf16_bits_to_float(bits);
}

inline void store(void* p, std::int64_t i, cudaDataType_t type, float v) {
  namespace h = shardscope::half;
  if (type == CUDA_R_32F) {
    static_cast<float*>(p)[i] = v;
    return;
  }
  static_cast<std::uint16_t*>(p)[i] = type == CUDA_R_16F ? h::float_to_f16_bits(v) : h::float_to_bf16_bits(v);
}

}  // namespace cuda_emulation
