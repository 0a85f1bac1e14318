// SPDX-License-Identifier: GPL-3.0-or-later
#include "ops/cpu/cpu_kernels.h"

#include "ops/cpu/cpu_simd.h"

namespace shardscope::cpu {

SS_CPU_CLONES double sum_of_squares_range(const float* __restrict x, std::int64_t n) {
  // Eight independent lanes, so the compiler can vectorize without reassociating.
  double lane[8] = {};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lane[j] += static_cast<double>(x[i + j]) * x[i + j];
  double s = 0.0;
  for (; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  for (double l : lane) s += l;
  return s;
}

SS_CPU_CLONES void layernorm_forward_rows(float* out, float* mean, float* rstd, const float* in, const float* weight,
                                          const float* bias, std::int64_t rows, int C, float eps) {
  for (std::int64_t r = 0; r < rows; ++r)
    math::layernorm_forward_row(in + r * C, weight, bias, out + r * C, mean + r, rstd + r, C, eps);
}

SS_CPU_CLONES void attention_softmax_rows(float* scores, int T, bool causal, const std::int32_t* padding,
                                          float scale) {
  for (int i = 0; i < T; ++i) {
    float* row = scores + static_cast<std::int64_t>(i) * T;
    math::softmax_row(row, row, T, causal ? i + 1 : T, padding, scale);
  }
}

SS_CPU_CLONES void attention_softmax_backward_rows(const float* probs, float* d, int T, float scale) {
  for (int i = 0; i < T; ++i) {
    const std::int64_t off = static_cast<std::int64_t>(i) * T;
    math::softmax_backward_row(probs + off, d + off, d + off, T, scale);
  }
}

SS_CPU_CLONES void cross_entropy_rows(float* losses, const float* logits, const std::int32_t* targets,
                                      std::int64_t rows, int V) {
  for (std::int64_t r = 0; r < rows; ++r) losses[r] = math::cross_entropy_row(logits + r * V, V, targets[r]);
}

SS_CPU_CLONES void cross_entropy_backward_rows(float* d_logits, const float* logits, const std::int32_t* targets,
                                               std::int64_t rows, int V, float dloss) {
  for (std::int64_t r = 0; r < rows; ++r)
    math::cross_entropy_backward_row(logits + r * V, d_logits + r * V, V, targets[r], dloss);
}

}  // namespace shardscope::cpu
