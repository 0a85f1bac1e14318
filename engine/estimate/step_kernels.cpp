// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/step_kernels.h"

#include <algorithm>

namespace shardscope {

namespace {

// Forward and backward seconds of one part of a layer (or the head), per micro-batch.
struct Pass {
  double forward = 0, backward = 0;
  double kernels_forward = 0, kernels_backward = 0;
};

struct Dims {
  double r, s, b, h, f, qkv, heads, hd, vocab, t, d;
  bool gated;
};

// out (m × n) = in (m × k) · W (k × n), `batch` of them in one kernel: d bytes a value.
double gemm(const KernelModel& km, const Dims& x, double m, double n, double k, double batch = 1) {
  return km.gemm_s(2 * m * n * k * batch, x.d * batch * (m * k + k * n + m * n));
}

// A weight GEMM r × n × k forward, and its two backward GEMMs.
void add_weight_gemm(Pass& p, const KernelModel& km, const Dims& x, double n, double k) {
  p.forward += gemm(km, x, x.r, n, k);
  p.backward += gemm(km, x, x.r, k, n) + gemm(km, x, k, n, x.r);
  p.kernels_forward += 1;
  p.kernels_backward += 2;
}

Pass weight_gemms(const KernelModel& km, const Dims& x) {
  Pass p;
  add_weight_gemm(p, km, x, x.qkv / x.t, x.h);
  add_weight_gemm(p, km, x, x.h, x.h / x.t);
  add_weight_gemm(p, km, x, (x.gated ? 2 : 1) * x.f / x.t, x.h);
  add_weight_gemm(p, km, x, x.h, x.f / x.t);
  return p;
}

Pass attention_core(const KernelModel& km, const Dims& x, bool flash) {
  const double batch = x.b * x.heads / x.t, s = x.s, hd = x.hd;
  Pass p;
  if (flash) {
    p.forward = km.gemm_s(4 * batch * s * s * hd, x.d * batch * 4 * s * hd);
    // Two backward kernels (FlashAttention-2's row sums of dO·O, then the main one): two floors.
    p.backward = km.gemm_s(10 * batch * s * s * hd, x.d * batch * 8 * s * hd) + km.gemm_floor_s;
    p.kernels_forward = 1;
    p.kernels_backward = 2;
    return p;
  }
  const double scores = x.d * batch * s * s;  // one pass over the s × s scores
  const double qk = gemm(km, x, s, s, hd, batch), pv = gemm(km, x, s, hd, s, batch);
  p.forward = qk + pv + km.memory_s(2 * scores);       // QKᵀ, softmax, PV
  p.backward = qk + 3 * pv + km.memory_s(3 * scores);  // dP, dV, dQ, dK and the softmax's backward
  p.kernels_forward = 2;
  p.kernels_backward = 4;
  return p;
}

Pass memory_bound(const KernelModel& km, const Dims& x, bool sequence_parallel) {
  const double norm_tokens = sequence_parallel ? x.r / x.t : x.r;
  const double q_and_k = (x.qkv + x.h) / 2;  // q is h wide; k and v share the rest
  Pass p;
  p.forward = km.memory_s(x.d * (norm_tokens * (2 * 2 + 2 * 3) * x.h + x.r * (x.gated ? 3 : 2) * x.f / x.t +
                                 (x.gated ? x.r * 2 * q_and_k / x.t : 0)));
  p.backward = km.memory_s(x.d * (norm_tokens * (2 * 3 + 2 * 3) * x.h + x.r * (x.gated ? 5 : 3) * x.f / x.t +
                                  (x.gated ? x.r * 2 * q_and_k / x.t : 0)));
  return p;
}

Dims dims_of(const ModelShape& m, const EstimateSettings& s) {
  Dims x{};
  x.b = s.micro_batch_size;
  x.s = s.seq;
  x.r = x.b * x.s;
  x.h = static_cast<double>(m.hidden);
  x.f = static_cast<double>(m.intermediate);
  x.gated = m.architecture == "llama";
  // The QKV width from the layer's parameters (3h, less with grouped-query attention).
  const double mlp = (x.gated ? 3 : 2) * x.h * x.f;
  x.qkv = std::max(x.h, (static_cast<double>(m.layer_parameters) - x.h * x.h - mlp) / x.h);
  x.heads = static_cast<double>(m.heads);
  x.hd = x.h / x.heads;
  x.vocab = static_cast<double>(m.vocab);
  x.t = s.layout.tp();
  x.d = s.precision == Precision::fp32 || s.activations == ActivationMode::shardscope ? 4 : 2;
  return x;
}

}  // namespace

StepKernels step_kernels(const ModelShape& model, const EstimateSettings& s, const KernelModel& km) {
  const Dims x = dims_of(model, s);
  const Pass w = weight_gemms(km, x), a = attention_core(km, x, s.flash_attention),
             m = memory_bound(km, x, s.sequence_parallel);
  const bool full = s.recompute == Recompute::full, again = s.recompute != Recompute::none;
  // The head: its GEMM, cross-entropy over the (split) vocabulary and the final norm.
  Pass head;
  add_weight_gemm(head, km, x, x.vocab / x.t, x.h);
  const double head_memory = km.memory_s(x.d * x.r * (3 * x.vocab / x.t + 5 * x.h));
  const double per_stage = 1.0 / s.layout.pp(), layers = static_cast<double>(model.layers) * per_stage;
  const double micro = static_cast<double>(s.micro_steps());
  StepKernels k;
  k.gemm_s = micro * (layers * (w.forward * (full ? 2 : 1) + w.backward) + per_stage * (head.forward + head.backward));
  k.attention_s = micro * layers * (a.forward * (again ? 2 : 1) + a.backward);
  k.memory_s = micro * (layers * (m.forward * (full ? 2 : 1) + m.backward) + per_stage * head_memory);
  k.gemm_kernels = micro * (layers * (w.kernels_forward * (full ? 2 : 1) + w.kernels_backward +
                                      a.kernels_forward * (again ? 2 : 1) + a.kernels_backward) +
                            per_stage * 3);
  return k;
}

}  // namespace shardscope
