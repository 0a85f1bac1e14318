// SPDX-License-Identifier: GPL-3.0-or-later
// Stand-in for CUDA's cuda_runtime.h under the CPU emulation (cuda_emulation.h).
#pragma once

#include "cuda_emulation.h"

struct CUstream_st;
using cudaStream_t = CUstream_st*;

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline const char* cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorInvalidValue"; }
inline const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "invalid argument"; }

template <typename Kernel>
cudaError_t cudaFuncSetAttribute(Kernel, cudaFuncAttribute attribute, int value) {
  if (attribute == cudaFuncAttributeMaxDynamicSharedMemorySize &&
      (value < 0 || static_cast<std::size_t>(value) > cuda_emulation::max_dynamic_shared_bytes))
    return cudaErrorInvalidValue;
  return cudaSuccess;
}
