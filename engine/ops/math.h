// SPDX-License-Identifier: GPL-3.0-or-later
// The per-element and per-row math of every op, written once. Each function is
// callable from host code (the CPU backend) and from CUDA kernels (the CUDA
// backend), so the CPU tests check the same arithmetic the GPU runs. Only the
// launch and reduction strategy differ between backends.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/half.h"  // SS_HD (host and device) and the float bit casts

namespace shardscope::math {

// max without libm's NaN rules: inlines to one instruction on every target.
SS_HD float max_f(float a, float b) { return a > b ? a : b; }

// e^x in plain arithmetic, so loops of it vectorize (libm's expf does not):
// x = n ln2 + r with |r| <= ln2/2 (ln2 split in two for exactness), e^r by its
// degree-6 Taylor polynomial (truncation below 1.2e-7 relative), 2^n built in
// the exponent bits. Inputs are clamped to [-87, 88]: below, the result is
// about 1e-38 instead of a denormal or 0; callers never rely on that range.
SS_HD float exp_approx(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float n = floorf(x * 1.4426950408889634f + 0.5f);
  const float r = (x - n * 0.693145751953125f) - n * 1.4286068203094173e-06f;
  const float p =
      1.0f + r * (1.0f + r * (0.5f + r * (1.6666667e-1f + r * (4.1666668e-2f + r * (8.3333338e-3f + r * 1.3888889e-3f)))));
  return p * half::bits_to_float(static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127) << 23);
}

// tanh(x) = 1 - 2 / (e^{2x} + 1), through exp_approx (absolute error ~1e-7).
SS_HD float tanh_approx(float x) { return 1.0f - 2.0f / (exp_approx(2.0f * x) + 1.0f); }

// ---- GELU -------------------------------------------------------------------
// GPT-2 uses the tanh approximation (Hendrycks & Gimpel 2016, eq. 2):
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// BERT uses the exact form 0.5 x (1 + erf(x / sqrt(2))).
enum class GeluKind : int { tanh_approx = 0, exact_erf = 1 };

SS_HD float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  const float inner = k * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanh_approx(inner));
}

SS_HD float gelu_tanh_grad(float x) {
  const float k = 0.7978845608028654f;
  const float x2 = x * x;
  const float inner = k * (x + 0.044715f * x2 * x);
  const float t = tanh_approx(inner);
  const float sech2 = 1.0f - t * t;
  return 0.5f * (1.0f + t) + 0.5f * x * sech2 * k * (1.0f + 3.0f * 0.044715f * x2);
}

SS_HD float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)); }

SS_HD float gelu_erf_grad(float x) {
  const float cdf = 0.5f * (1.0f + erff(x * 0.7071067811865476f));
  const float pdf = 0.3989422804014327f * expf(-0.5f * x * x);  // 1/sqrt(2 pi) e^{-x^2/2}
  return cdf + x * pdf;
}

SS_HD float gelu(float x, GeluKind kind) { return kind == GeluKind::tanh_approx ? gelu_tanh(x) : gelu_erf(x); }
SS_HD float gelu_grad(float x, GeluKind kind) {
  return kind == GeluKind::tanh_approx ? gelu_tanh_grad(x) : gelu_erf_grad(x);
}

// ---- LayerNorm (Ba et al. 2016), one row of C values ----------------------------
// The per-element steps are separate functions so the GPU's warp-per-row
// kernels run exactly these expressions; only the row sums differ in order.
// y = (x - mean) * rstd * w + b, rstd = 1 / sqrt(var + eps), var biased (/C).
SS_HD float layernorm_output(float x, float mean, float rstd, float w, float b) { return (x - mean) * rstd * w + b; }

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * w, xhat = (x - mean) * rstd.
SS_HD float layernorm_input_grad(float dy, float x, float w, float mean, float rstd, float mean_g, float mean_gx) {
  const float xhat = (x - mean) * rstd;
  return rstd * (dy * w - mean_g - xhat * mean_gx);
}

SS_HD void layernorm_forward_row(const float* x, const float* w, const float* b, float* y, float* mean_out,
                                 float* rstd_out, int C, float eps) {
  float mean = 0.0f;
  for (int i = 0; i < C; ++i) mean += x[i];
  mean /= static_cast<float>(C);
  float var = 0.0f;
  for (int i = 0; i < C; ++i) {
    const float d = x[i] - mean;
    var += d * d;
  }
  var /= static_cast<float>(C);
  const float rstd = 1.0f / sqrtf(var + eps);
  for (int i = 0; i < C; ++i) y[i] = layernorm_output(x[i], mean, rstd, w[i], b[i]);
  *mean_out = mean;
  *rstd_out = rstd;
}

// dx for one row (overwrites dx): with xhat = (x-mean)*rstd and g = dy*w,
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
// The weight and bias gradients are sums over rows, done by the caller.
SS_HD void layernorm_backward_row(const float* dy, const float* x, const float* w, float mean, float rstd, float* dx,
                                  int C) {
  float mean_g = 0.0f;
  float mean_gx = 0.0f;
  for (int i = 0; i < C; ++i) {
    const float g = dy[i] * w[i];
    mean_g += g;
    mean_gx += g * (x[i] - mean) * rstd;
  }
  mean_g /= static_cast<float>(C);
  mean_gx /= static_cast<float>(C);
  for (int i = 0; i < C; ++i) dx[i] = layernorm_input_grad(dy[i], x[i], w[i], mean, rstd, mean_g, mean_gx);
}

// ---- Softmax over one row, with the first `valid` entries live -------------------
// Entries at index >= valid (causal mask) or with mask[j] == 0 (padding) get
// probability 0. `mask` may be null. A row with nothing live becomes all zeros.
SS_HD bool softmax_live(int j, int valid, const std::int32_t* mask) {
  return j < valid && (mask == nullptr || mask[j] != 0);
}

SS_HD void softmax_row(const float* scores, float* probs, int n, int valid, const std::int32_t* mask, float scale) {
  float max_v = -INFINITY;
  for (int j = 0; j < valid; ++j)
    if (mask == nullptr || mask[j] != 0) max_v = max_f(max_v, scores[j] * scale);
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float e = softmax_live(j, valid, mask) ? exp_approx(scores[j] * scale - max_v) : 0.0f;
    probs[j] = e;
    sum += e;
  }
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  for (int j = 0; j < n; ++j) probs[j] *= inv;
}

// Softmax backward: dscores_j = p_j (dp_j - sum_k p_k dp_k), times the score scale.
SS_HD float softmax_backward_element(float p, float dp, float dot, float scale) { return scale * p * (dp - dot); }

SS_HD void softmax_backward_row(const float* probs, const float* dprobs, float* dscores, int n, float scale) {
  float dot = 0.0f;
  for (int j = 0; j < n; ++j) dot += probs[j] * dprobs[j];
  for (int j = 0; j < n; ++j) dscores[j] = softmax_backward_element(probs[j], dprobs[j], dot, scale);
}

// ---- Softmax cross-entropy over one row of V logits -------------------------------
// From the row's max and sum of e^(logit - max): -log softmax = log(sum) + max - logit[target].
SS_HD float cross_entropy_loss(float sum, float max_v, float target_logit) { return logf(sum) + max_v - target_logit; }

// One element of the gradient before the target's -dloss: e^(logit - max) * scale, scale = dloss / sum.
SS_HD float cross_entropy_grad(float logit, float max_v, float scale) { return exp_approx(logit - max_v) * scale; }

// Returns -log softmax(logits)[target]; target < 0 means "ignored" (returns 0).
SS_HD float cross_entropy_row(const float* logits, int V, int target) {
  if (target < 0) return 0.0f;
  float max_v = -INFINITY;
  for (int j = 0; j < V; ++j) max_v = max_f(max_v, logits[j]);
  float sum = 0.0f;
  for (int j = 0; j < V; ++j) sum += exp_approx(logits[j] - max_v);
  return cross_entropy_loss(sum, max_v, logits[target]);
}

// dlogits = (softmax(logits) - onehot(target)) * dloss; zeros if ignored.
SS_HD void cross_entropy_backward_row(const float* logits, float* dlogits, int V, int target, float dloss) {
  if (target < 0) {
    for (int j = 0; j < V; ++j) dlogits[j] = 0.0f;
    return;
  }
  float max_v = -INFINITY;
  for (int j = 0; j < V; ++j) max_v = max_f(max_v, logits[j]);
  float sum = 0.0f;
  for (int j = 0; j < V; ++j) sum += exp_approx(logits[j] - max_v);
  const float scale = dloss / sum;
  for (int j = 0; j < V; ++j) dlogits[j] = cross_entropy_grad(logits[j], max_v, scale);
  dlogits[target] -= dloss;
}

// ---- AdamW (Loshchilov & Hutter 2019), one element ------------------------------
// m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
// p -= lr * ( (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) + wd * p )
// The gradient is multiplied by grad_scale first: gradient clipping folded into
// the update, so the gradients are read once.
struct AdamWStep {
  float lr, beta1, beta2, eps, weight_decay;
  float bias_correction1;  // 1 - beta1^t
  float bias_correction2;  // 1 - beta2^t
  float grad_scale = 1.0f;
};

SS_HD void adamw_element(float* p, float g_raw, float* m, float* v, const AdamWStep& s) {
  const float g = g_raw * s.grad_scale;
  const float m_new = s.beta1 * *m + (1.0f - s.beta1) * g;
  const float v_new = s.beta2 * *v + (1.0f - s.beta2) * g * g;
  *m = m_new;
  *v = v_new;
  const float m_hat = m_new / s.bias_correction1;
  const float v_hat = v_new / s.bias_correction2;
  *p -= s.lr * (m_hat / (sqrtf(v_hat) + s.eps) + s.weight_decay * *p);
}

}  // namespace shardscope::math
