// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend's per-element loops (cpu_kernels.h), apart from the row
// kernels in cpu_kernels.cpp because they are compiled without
// -fassociative-math (engine/CMakeLists.txt): CpuBackend cuts their ranges by
// the thread count, so an element may fall in a clone's vector body in one run
// and in its scalar tail in another. Reassociated, the two paths round
// differently (AVX-512's GELU did, with 3 threads against 1, 2 and 4); kept in
// source order, every element gets the same bits for any thread count.
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

}  // namespace shardscope::cpu
