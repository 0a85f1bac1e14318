// SPDX-License-Identifier: GPL-3.0-or-later
#include "ops/cpu/cpu_kernels.h"

#include "ops/cpu/cpu_simd.h"

namespace shardscope::cpu {

SS_CPU_CLONES void adamw_range(float* __restrict params, const float* __restrict grads, float* __restrict m,
                               float* __restrict v, std::int64_t n, math::AdamWStep step) {
  for (std::int64_t i = 0; i < n; ++i) math::adamw_element(params + i, grads[i], m + i, v + i, step);
}

SS_CPU_CLONES void gelu_forward_range(float* __restrict out, const float* __restrict in, std::int64_t n,
                                      math::GeluKind kind) {
  if (kind == math::GeluKind::tanh_approx) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = math::gelu_tanh(in[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) out[i] = math::gelu_erf(in[i]);
  }
}

SS_CPU_CLONES void gelu_backward_range(float* d_in, const float* d_out, const float* __restrict in, std::int64_t n,
                                       math::GeluKind kind) {
  if (kind == math::GeluKind::tanh_approx) {
    for (std::int64_t i = 0; i < n; ++i) d_in[i] = d_out[i] * math::gelu_tanh_grad(in[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) d_in[i] = d_out[i] * math::gelu_erf_grad(in[i]);
  }
}

SS_CPU_CLONES void add_range(float* out, const float* a, const float* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

SS_CPU_CLONES void scale_range(float* x, float factor, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] *= factor;
}

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

SS_CPU_CLONES void layernorm_param_grads(float* __restrict d_weight, float* __restrict d_bias, const float* d_out,
                                         const float* in, const float* mean, const float* rstd, std::int64_t rows,
                                         int C, std::int64_t c0, std::int64_t c1) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* dy = d_out + r * C;
    const float* x = in + r * C;
    const float m = mean[r], s = rstd[r];
    for (std::int64_t c = c0; c < c1; ++c) {
      d_weight[c] += dy[c] * (x[c] - m) * s;
      d_bias[c] += dy[c];
    }
  }
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
