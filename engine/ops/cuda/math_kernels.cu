// SPDX-License-Identifier: GPL-3.0-or-later
// Kernels over the whole-row functions of ops/math.h, which only the CPU
// backend calls: they prove those compile for the GPU too. Nothing launches
// them; the CUDA backend's own kernels (cuda_backend.cu, cuda_row_kernels.cu)
// already compile the per-element math (gelu, adamw_element, ...) they call.
#include "ops/math.h"

namespace shardscope::cuda {

using namespace shardscope::math;

__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* in, const float* w,
                                         const float* b, int rows, int C, float eps) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) layernorm_forward_row(in + static_cast<long long>(r) * C, w, b, out + static_cast<long long>(r) * C,
                                      mean + r, rstd + r, C, eps);
}

__global__ void layernorm_backward_kernel(float* d_in, const float* d_out, const float* in, const float* w,
                                          const float* mean, const float* rstd, int rows, int C) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows)
    layernorm_backward_row(d_out + static_cast<long long>(r) * C, in + static_cast<long long>(r) * C, w, mean[r],
                           rstd[r], d_in + static_cast<long long>(r) * C, C);
}

__global__ void softmax_rows_kernel(float* probs, const float* scores, int rows, int n, float scale) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) softmax_row(scores + static_cast<long long>(r) * n, probs + static_cast<long long>(r) * n, n, n,
                            nullptr, scale);
}

__global__ void cross_entropy_kernel(float* losses, const float* logits, const int* targets, int rows, int V) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) losses[r] = cross_entropy_row(logits + static_cast<long long>(r) * V, V, targets[r]);
}

}  // namespace shardscope::cuda
