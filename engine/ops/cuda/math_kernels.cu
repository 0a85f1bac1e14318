// SPDX-License-Identifier: GPL-3.0-or-later
// Kernels over the shared per-element and per-row math of ops/math.h. Today
// they prove the math compiles for the GPU; the CUDA backend launches them.
#include "ops/math.h"

namespace shardscope::cuda {

using namespace shardscope::math;

__global__ void gelu_forward_kernel(float* out, const float* in, long long n, GeluKind kind) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = gelu(in[i], kind);
}

__global__ void gelu_backward_kernel(float* d_in, const float* d_out, const float* in, long long n, GeluKind kind) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) d_in[i] = d_out[i] * gelu_grad(in[i], kind);
}

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

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, long long n, AdamWStep step) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) adamw_element(p + i, g[i], m + i, v + i, step);
}

}  // namespace shardscope::cuda
