// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend's inner loops over a range of elements or rows, compiled for
// several x86-64 levels (cpu_simd.h). Each calls the shared math of ops/math.h;
// CpuBackend spreads ranges over threads.
#pragma once

#include <cstdint>

#include "ops/math.h"

namespace shardscope::cpu {

void adamw_range(float* params, const float* grads, float* m, float* v, std::int64_t n, math::AdamWStep step);
void gelu_forward_range(float* out, const float* in, std::int64_t n, math::GeluKind kind);
void gelu_backward_range(float* d_in, const float* d_out, const float* in, std::int64_t n, math::GeluKind kind);
void add_range(float* out, const float* a, const float* b, std::int64_t n);
void scale_range(float* x, float factor, std::int64_t n);
double sum_of_squares_range(const float* x, std::int64_t n);
void layernorm_forward_rows(float* out, float* mean, float* rstd, const float* in, const float* weight,
                            const float* bias, std::int64_t rows, int C, float eps);
// Adds sum_r dy * xhat and sum_r dy over rows into d_weight, d_bias for channels [c0, c1).
void layernorm_param_grads(float* d_weight, float* d_bias, const float* d_out, const float* in, const float* mean,
                           const float* rstd, std::int64_t rows, int C, std::int64_t c0, std::int64_t c1);
// Softmax of the T x T score rows of one (sequence, head), in place.
void attention_softmax_rows(float* scores, int T, bool causal, const std::int32_t* padding, float scale);
void attention_softmax_backward_rows(const float* probs, float* d, int T, float scale);
void cross_entropy_rows(float* losses, const float* logits, const std::int32_t* targets, std::int64_t rows, int V);
void cross_entropy_backward_rows(float* d_logits, const float* logits, const std::int32_t* targets,
                                 std::int64_t rows, int V, float dloss);

}  // namespace shardscope::cpu
