// SPDX-License-Identifier: GPL-3.0-or-later
// The per-row ops of the CUDA backend, a warp or a block per row:
//   - rows of a few thousand floats (layernorm's C, attention's T): one warp per
//     row, 8 rows per block; lane l reads elements l, l+32, ... so every load
//     of the warp is one 128-byte line;
//   - rows of tens of thousands (cross-entropy's V): one block per row.
// Deterministic: each lane sums its elements in index order, lanes are combined
// by a fixed xor butterfly (every lane ends with the same bits, as float
// addition is commutative) and warps of a block in warp order. The partition
// depends only on the shapes, never on timing, so the same input gives the
// same bits on every run. The per-element math is ops/math.h's, as on the CPU;
// only the order of the row sums differs from the CPU's.
#include <cuda_runtime.h>

#include <cmath>

#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/cuda_row_kernels.cuh"
#include "ops/math.h"

namespace shardscope::cuda_detail {

namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = kThreads / kWarp;  // warp-per-row kernels: 8 rows per block of 256
constexpr unsigned kFullMask = 0xffffffffu;

// Sum over the 32 lanes by xor butterfly: a + b == b + a bitwise, so all lanes agree.
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// Max over the 32 lanes; lane 0's result is broadcast (max_f of +0 and -0 depends on the order).
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = math::max_f(v, __shfl_xor_sync(kFullMask, v, offset));
  return __shfl_sync(kFullMask, v, 0);
}

// Block-wide sum (blockDim.x == kThreads): warp sums, then the 8 warp results in warp order by every thread.
__device__ float block_sum_float(float v) {
  __shared__ float per_warp[kThreads / kWarp];
  v = warp_sum(v);
  if (threadIdx.x % kWarp == 0) per_warp[threadIdx.x / kWarp] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / kWarp; ++w) total += per_warp[w];
  __syncthreads();  // every thread has read per_warp before the next call writes it
  return total;
}

__device__ float block_max_float(float v) {
  __shared__ float per_warp[kThreads / kWarp];
  v = warp_max(v);
  if (threadIdx.x % kWarp == 0) per_warp[threadIdx.x / kWarp] = v;
  __syncthreads();
  float total = per_warp[0];
  for (int w = 1; w < kThreads / kWarp; ++w) total = math::max_f(total, per_warp[w]);
  __syncthreads();
  return total;
}

unsigned warp_row_blocks(long long rows) {
  return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

// ---- layernorm ------------------------------------------------------------------------------

// in, out (rows, C): one warp per row, lanes stride over C. Two-pass mean and
// variance as math::layernorm_forward_row; the row is re-read from L1/L2.
__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* in, const float* w,
                                         const float* b, int rows, int C, float eps) {
  const long long r = blockIdx.x * static_cast<long long>(kRowsPerBlock) + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (r >= rows) return;  // whole warps leave together
  const float* x = in + r * C;
  float sum = 0.0f;
  for (int i = lane; i < C; i += kWarp) sum += x[i];
  const float m = warp_sum(sum) / static_cast<float>(C);
  float sq = 0.0f;
  for (int i = lane; i < C; i += kWarp) {
    const float d = x[i] - m;
    sq += d * d;
  }
  const float var = warp_sum(sq) / static_cast<float>(C);
  const float s = 1.0f / sqrtf(var + eps);
  float* y = out + r * C;
  for (int i = lane; i < C; i += kWarp) y[i] = math::layernorm_output(x[i], m, s, w[i], b[i]);
  if (lane == 0) {
    mean[r] = m;
    rstd[r] = s;
  }
}

// d_out, in, d_in (rows, C): one warp per row; the two row means of
// math::layernorm_backward_row, then d_in overwritten or added to.
__global__ void layernorm_backward_kernel(float* d_in, const float* d_out, const float* in, const float* w,
                                          const float* mean, const float* rstd, int rows, int C, bool accumulate) {
  const long long r = blockIdx.x * static_cast<long long>(kRowsPerBlock) + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (r >= rows) return;
  const float* dy = d_out + r * C;
  const float* x = in + r * C;
  const float m = mean[r], s = rstd[r];
  float sum_g = 0.0f, sum_gx = 0.0f;
  for (int i = lane; i < C; i += kWarp) {
    const float g = dy[i] * w[i];
    sum_g += g;
    sum_gx += g * (x[i] - m) * s;
  }
  const float mean_g = warp_sum(sum_g) / static_cast<float>(C);
  const float mean_gx = warp_sum(sum_gx) / static_cast<float>(C);
  float* dx = d_in + r * C;
  for (int i = lane; i < C; i += kWarp) {
    const float g = math::layernorm_input_grad(dy[i], x[i], w[i], m, s, mean_g, mean_gx);
    dx[i] = accumulate ? dx[i] + g : g;
  }
}

// ---- attention softmax ---------------------------------------------------------------------

// scores (B, H, T, T) in place: one warp per row ((b*H + h)*T + i), lanes stride
// over the keys; only the live keys (j <= i when causal, padding != 0) are read.
__global__ void attention_softmax_kernel(float* scores, long long rows, int H, int T, bool causal, const int* padding,
                                         float scale) {
  const long long row = blockIdx.x * static_cast<long long>(kRowsPerBlock) + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (row >= rows) return;
  const int i = static_cast<int>(row % T);
  const long long b = row / (static_cast<long long>(H) * T);
  const int* mask = padding != nullptr ? padding + b * T : nullptr;
  const int valid = causal ? i + 1 : T;
  float* p = scores + row * T;
  float max_v = -INFINITY;
  for (int j = lane; j < valid; j += kWarp)
    if (math::softmax_live(j, valid, mask)) max_v = math::max_f(max_v, p[j] * scale);
  max_v = warp_max(max_v);
  float sum = 0.0f;
  for (int j = lane; j < valid; j += kWarp)
    if (math::softmax_live(j, valid, mask)) sum += math::exp_approx(p[j] * scale - max_v);
  sum = warp_sum(sum);
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // a row with no live key becomes zeros
  for (int j = lane; j < T; j += kWarp)
    p[j] = math::softmax_live(j, valid, mask) ? math::exp_approx(p[j] * scale - max_v) * inv : 0.0f;
}

// probs, d (rows, T): one warp per row; d (dP in, dS out) in place.
__global__ void attention_softmax_backward_kernel(const float* probs, float* d, long long rows, int T, float scale) {
  const long long row = blockIdx.x * static_cast<long long>(kRowsPerBlock) + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (row >= rows) return;
  const float* p = probs + row * T;
  float* dp = d + row * T;
  float dot = 0.0f;
  for (int j = lane; j < T; j += kWarp) dot += p[j] * dp[j];
  dot = warp_sum(dot);
  for (int j = lane; j < T; j += kWarp) dp[j] = math::softmax_backward_element(p[j], dp[j], dot, scale);
}

// ---- cross-entropy ------------------------------------------------------------------------------

// What the forward and the backward of a row of logits x (V) both need: the
// block max, then the block sum of e^(x - max), as math::cross_entropy_row.
// Every thread of the block calls it (it holds barriers).
struct RowSoftmaxSums {
  float max_v;
  float sum;
};

__device__ RowSoftmaxSums row_softmax_sums(const float* x, int V) {
  float max_v = -INFINITY;
  for (int j = static_cast<int>(threadIdx.x); j < V; j += kThreads) max_v = math::max_f(max_v, x[j]);
  max_v = block_max_float(max_v);
  float sum = 0.0f;
  for (int j = static_cast<int>(threadIdx.x); j < V; j += kThreads) sum += math::exp_approx(x[j] - max_v);
  return {max_v, block_sum_float(sum)};
}

// logits (rows, V): one block per row, threads stride over V. Ignored rows: 0.
__global__ void cross_entropy_kernel(float* losses, const float* logits, const int* targets, int V) {
  const long long r = blockIdx.x;
  const int target = targets[r];
  if (target < 0) {  // the whole block leaves before any barrier
    if (threadIdx.x == 0) losses[r] = 0.0f;
    return;
  }
  const float* x = logits + r * V;
  const RowSoftmaxSums row = row_softmax_sums(x, V);
  if (threadIdx.x == 0) losses[r] = math::cross_entropy_loss(row.sum, row.max_v, x[target]);
}

// logits, d_logits (rows, V), may alias: one block per row; every read of the
// max and sum passes precedes the barriers, and the last pass reads and writes
// the same element in the same thread. Ignored rows: zeros.
__global__ void cross_entropy_backward_kernel(float* d_logits, const float* logits, const int* targets, int V,
                                              float dloss) {
  const long long r = blockIdx.x;
  const int target = targets[r];
  float* d = d_logits + r * V;
  if (target < 0) {
    for (int j = static_cast<int>(threadIdx.x); j < V; j += kThreads) d[j] = 0.0f;
    return;
  }
  const float* x = logits + r * V;
  const RowSoftmaxSums row = row_softmax_sums(x, V);
  const float scale = dloss / row.sum;
  for (int j = static_cast<int>(threadIdx.x); j < V; j += kThreads) {
    const float g = math::cross_entropy_grad(x[j], row.max_v, scale);
    d[j] = j == target ? g - dloss : g;  // math::cross_entropy_backward_row's dlogits[target] -= dloss
  }
}

}  // namespace

// ---- launchers ------------------------------------------------------------------------------------

void layernorm_forward_rows(cudaStream_t stream, float* out, float* mean, float* rstd, const float* in,
                            const float* weight, const float* bias, int rows, int C, float eps) {
  if (rows <= 0) return;
  SS_LAUNCH(layernorm_forward_kernel, warp_row_blocks(rows), kThreads, 0, stream)
  (out, mean, rstd, in, weight, bias, rows, C, eps);
  check_launch("layernorm_forward_kernel", "layernorm_forward");
}

void layernorm_backward_rows(cudaStream_t stream, float* d_in, const float* d_out, const float* in, const float* weight,
                             const float* mean, const float* rstd, int rows, int C, bool accumulate) {
  if (rows <= 0 || C <= 0) return;
  SS_LAUNCH(layernorm_backward_kernel, warp_row_blocks(rows), kThreads, 0, stream)
  (d_in, d_out, in, weight, mean, rstd, rows, C, accumulate);
  check_launch("layernorm_backward_kernel", "layernorm_backward");
}

void attention_softmax_rows(cudaStream_t stream, float* scores, int B, int H, int T, bool causal,
                            const std::int32_t* padding, float scale) {
  const long long rows = static_cast<long long>(B) * H * T;
  if (rows <= 0) return;
  SS_LAUNCH(attention_softmax_kernel, warp_row_blocks(rows), kThreads, 0, stream)
  (scores, rows, H, T, causal, padding, scale);
  check_launch("attention_softmax_kernel", "attention_forward");
}

void attention_softmax_backward_rows(cudaStream_t stream, const float* probs, float* d, long long rows, int T,
                                     float scale) {
  if (rows <= 0) return;
  SS_LAUNCH(attention_softmax_backward_kernel, warp_row_blocks(rows), kThreads, 0, stream)(probs, d, rows, T, scale);
  check_launch("attention_softmax_backward_kernel", "attention_backward");
}

void cross_entropy_rows(cudaStream_t stream, float* losses, const float* logits, const std::int32_t* targets, int rows,
                        int V) {
  if (rows <= 0) return;
  SS_LAUNCH(cross_entropy_kernel, static_cast<unsigned>(rows), kThreads, 0, stream)(losses, logits, targets, V);
  check_launch("cross_entropy_kernel", "cross_entropy_forward");
}

void cross_entropy_backward_rows(cudaStream_t stream, float* d_logits, const float* logits, const std::int32_t* targets,
                                 int rows, int V, float dloss) {
  if (rows <= 0) return;
  SS_LAUNCH(cross_entropy_backward_kernel, static_cast<unsigned>(rows), kThreads, 0, stream)
  (d_logits, logits, targets, V, dloss);
  check_launch("cross_entropy_backward_kernel", "cross_entropy_backward");
}

}  // namespace shardscope::cuda_detail
