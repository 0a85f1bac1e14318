// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to the CUDA backend's sources (cuda_backend.cu, cuda_storage.cu):
// error checks that name the call and the op, the launch geometry, and the
// deterministic block-wide double sum.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "ops/cuda/cuda_error_text.h"

namespace shardscope::cuda_detail {

[[noreturn]] inline void fail(const char* call, const char* op, const std::string& error) {
  throw std::runtime_error(std::string("CUDA backend: ") + call + " failed in " + op + ": " + error);
}

inline void check(cudaError_t status, const char* call, const char* op) {
  if (status != cudaSuccess) fail(call, op, cuda_error_text(status));
}

inline void check(cublasStatus_t status, const char* call, const char* op) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(call, op, std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")");
}

// After a kernel launch: a bad configuration is reported here; faults inside the
// kernel surface at the next synchronizing call, named by that call.
inline void check_launch(const char* kernel, const char* op) {
  check(cudaGetLastError(), kernel, op);
}

constexpr int kThreads = 256;

// Blocks of kThreads covering n items, one per thread (the grid-stride loops also
// accept fewer); capped at the grid limit 2^31 - 1.
inline unsigned blocks_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(blocks, 0x7FFFFFFF)));
}


// kernel<<<grid, block, shared_bytes, stream>>>(args...) written as
// SS_LAUNCH(kernel, grid, block, shared_bytes, stream)(args...), so that the
// CPU emulation of the kernels (tests/engine/cuda_emulation) can run them too.
#ifndef SS_LAUNCH
#define SS_LAUNCH(kernel, grid, block, shared_bytes, stream) kernel<<<(grid), (block), (shared_bytes), (stream)>>>
#endif

// A kernel's dynamic shared memory, 128-byte aligned (the size is the launch's).
#ifndef SS_DYNAMIC_SHARED
#define SS_DYNAMIC_SHARED(name) extern __shared__ __align__(128) unsigned char name[]
#endif

#define SS_GRID_STRIDE(i, n)                                                                 \
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<long long>(gridDim.x) * blockDim.x)

// ---- deterministic reductions in double ---------------------------------------------------

// Block-wide sum of one double per thread (kThreads threads), result in thread 0.
__device__ inline double block_sum(double value) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int half_width = kThreads / 2; half_width > 0; half_width /= 2) {
    if (threadIdx.x < half_width) partial[threadIdx.x] += partial[threadIdx.x + half_width];
    __syncthreads();
  }
  const double total = partial[0];
  __syncthreads();  // every thread has read partial[0] before the next call writes it
  return total;
}

constexpr int kReduceBlocks = 256;  // fixed, so the summation order never changes

}  // namespace shardscope::cuda_detail
