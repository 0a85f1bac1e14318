// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend's vocabulary-parallel ops (ops/backend.h): tensor
// parallelism's embedding lookup and gradient over this rank's rows
// [first, first + owned) of the token table, and the pieces of the
// vocabulary-parallel cross-entropy (model/tensor_parallel.cpp) over this
// rank's columns of the logits. Kept simple and deterministic: a thread per
// element, per row or per channel, each summing in index order, as the CPU
// backend does (so the embedding gradient is the CPU's, bit for bit; the
// loss pieces follow the same per-element math, ops/math.h). Faster
// block-per-row variants would be measured in bench/gpu first.
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_common.cuh"
#include "ops/math.h"

namespace shardscope {

namespace {

using namespace cuda_detail;

__global__ void vocab_embedding_forward_kernel(float* out, const int* ids, const int* type_ids, const float* tokens,
                                               const float* positions, const float* types, int T, int C, int first,
                                               int owned, long long n) {
  SS_GRID_STRIDE(i, n) {
    const long long r = i / C;
    const long long c = i % C;
    const long long local = static_cast<long long>(ids[r]) - first;
    if (local < 0 || local >= owned) {
      out[i] = 0.0f;
      continue;
    }
    float v = tokens[local * C + c] + positions[(r % T) * C + c];
    if (types != nullptr) v += types[static_cast<long long>(type_ids[r]) * C + c];
    out[i] = v;
  }
}

// A thread per channel walks the rows in order: no two threads add to one float.
__global__ void vocab_embedding_backward_kernel(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                                                const int* ids, const int* type_ids, long long rows, int T, int C,
                                                int first, int owned) {
  SS_GRID_STRIDE(c, C) {
    for (long long r = 0; r < rows; ++r) {
      const float g = d_out[r * C + c];
      d_positions[(r % T) * C + c] += g;
      if (d_types != nullptr) d_types[static_cast<long long>(type_ids[r]) * C + c] += g;
      const long long local = static_cast<long long>(ids[r]) - first;
      if (local >= 0 && local < owned) d_tokens[local * C + c] += g;
    }
  }
}

__global__ void row_max_kernel(float* maxima, const float* logits, int rows, int V) {
  SS_GRID_STRIDE(r, rows) {
    float m = -INFINITY;
    for (int j = 0; j < V; ++j) m = math::max_f(m, logits[r * V + j]);
    maxima[r] = m;
  }
}

__global__ void vocab_cross_entropy_sums_kernel(float* sums, float* row_max, const float* maxima, int t,
                                                const float* logits, const int* targets, int rows, int V, int first) {
  SS_GRID_STRIDE(r, rows) {
    float m = -INFINITY, sum = 0.0f;
    for (int k = 0; k < t; ++k) m = math::max_f(m, maxima[k * static_cast<long long>(rows) + r]);
    for (int j = 0; j < V; ++j) sum += math::exp_approx(logits[r * V + j] - m);
    const long long target = static_cast<long long>(targets[r]) - first;
    row_max[r] = m;
    sums[r] = sum;
    sums[rows + r] = targets[r] >= 0 && target >= 0 && target < V ? logits[r * V + target] : 0.0f;
  }
}

__global__ void vocab_cross_entropy_losses_kernel(float* losses, float* log_sum_exp, const float* sums,
                                                  const float* row_max, const int* targets, int rows) {
  SS_GRID_STRIDE(r, rows) {
    log_sum_exp[r] = logf(sums[r]) + row_max[r];
    losses[r] = targets[r] < 0 ? 0.0f : math::cross_entropy_loss(sums[r], row_max[r], sums[rows + r]);
  }
}

__global__ void vocab_cross_entropy_backward_kernel(float* d_logits, const float* logits, const float* log_sum_exp,
                                                    const int* targets, int V, int first, float dloss, long long n) {
  SS_GRID_STRIDE(i, n) {
    const long long r = i / V;
    const long long j = i % V;
    if (targets[r] < 0) {
      d_logits[i] = 0.0f;
      continue;
    }
    float d = math::exp_approx(logits[i] - log_sum_exp[r]) * dloss;
    if (static_cast<long long>(targets[r]) - first == j) d -= dloss;
    d_logits[i] = d;
  }
}

}  // namespace

void CudaBackend::vocab_embedding_forward(float* out, const std::int32_t* ids, const std::int32_t* type_ids,
                                          const float* tokens, const float* positions, const float* types, int B, int T,
                                          int C, int first, int owned) {
  const long long n = static_cast<long long>(B) * T * C;
  if (n <= 0) return;
  make_current("vocab_embedding_forward");
  SS_LAUNCH(vocab_embedding_forward_kernel, blocks_for(n), kThreads, 0, stream_)
  (out, ids, type_ids, tokens, positions, types, T, C, first, owned, n);
  check_launch("vocab_embedding_forward_kernel", "vocab_embedding_forward");
}

void CudaBackend::vocab_embedding_backward(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                                           const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C,
                                           int first, int owned) {
  if (B <= 0 || T <= 0 || C <= 0) return;
  make_current("vocab_embedding_backward");
  SS_LAUNCH(vocab_embedding_backward_kernel, blocks_for(C), kThreads, 0, stream_)
  (d_tokens, d_positions, d_types, d_out, ids, type_ids, static_cast<long long>(B) * T, T, C, first, owned);
  check_launch("vocab_embedding_backward_kernel", "vocab_embedding_backward");
}

void CudaBackend::row_max(float* maxima, const float* logits, int rows, int V) {
  if (rows <= 0) return;
  make_current("row_max");
  SS_LAUNCH(row_max_kernel, blocks_for(rows), kThreads, 0, stream_)(maxima, logits, rows, V);
  check_launch("row_max_kernel", "row_max");
}

void CudaBackend::vocab_cross_entropy_sums(float* sums, float* row_max, const float* maxima, int t, const float* logits,
                                           const std::int32_t* targets, int rows, int V, int first) {
  if (rows <= 0) return;
  make_current("vocab_cross_entropy_sums");
  SS_LAUNCH(vocab_cross_entropy_sums_kernel, blocks_for(rows), kThreads, 0, stream_)
  (sums, row_max, maxima, t, logits, targets, rows, V, first);
  check_launch("vocab_cross_entropy_sums_kernel", "vocab_cross_entropy_sums");
}

// The mean over scored rows on the host, in row order and in double, as the CPU backend sums it.
float CudaBackend::vocab_cross_entropy_losses(float* losses, float* log_sum_exp, const float* sums,
                                              const float* row_max, const std::int32_t* targets, int rows) {
  if (rows <= 0) return 0.0f;
  const char* op = "vocab_cross_entropy_losses";
  make_current(op);
  SS_LAUNCH(vocab_cross_entropy_losses_kernel, blocks_for(rows), kThreads, 0, stream_)
  (losses, log_sum_exp, sums, row_max, targets, rows);
  check_launch("vocab_cross_entropy_losses_kernel", op);
  std::vector<float> host_losses(static_cast<std::size_t>(rows));
  std::vector<std::int32_t> host_targets(static_cast<std::size_t>(rows));
  check(
      cudaMemcpyAsync(host_losses.data(), losses, host_losses.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_),
      "cudaMemcpyAsync", op);
  check(cudaMemcpyAsync(host_targets.data(), targets, host_targets.size() * sizeof(std::int32_t),
                        cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync", op);
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", op);
  double total = 0.0;
  int counted = 0;
  for (std::size_t r = 0; r < host_losses.size(); ++r) {
    if (host_targets[r] < 0) continue;
    total += host_losses[r];
    ++counted;
  }
  return counted > 0 ? static_cast<float>(total / counted) : 0.0f;
}

void CudaBackend::vocab_cross_entropy_backward(float* d_logits, const float* logits, const float* log_sum_exp,
                                               const std::int32_t* targets, int rows, int V, int first,
                                               float dloss_per_row) {
  const long long n = static_cast<long long>(rows) * V;
  if (n <= 0) return;
  make_current("vocab_cross_entropy_backward");
  SS_LAUNCH(vocab_cross_entropy_backward_kernel, blocks_for(n), kThreads, 0, stream_)
  (d_logits, logits, log_sum_exp, targets, V, first, dloss_per_row, n);
  check_launch("vocab_cross_entropy_backward_kernel", "vocab_cross_entropy_backward");
}

}  // namespace shardscope
