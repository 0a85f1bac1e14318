// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/moe_kernels.h"

#include <algorithm>

#include "model/mixture_of_experts.h"

namespace shardscope {

namespace {

struct MoeDims {
  double r, h, d, E, k, t;
  double expert_f, shared_f;  // one expert's width, the shared experts' together
  bool gated;
  double launches_per_projection(double rank_experts) const { return per_expert_launches ? rank_experts : 1; }
  bool per_expert_launches;
};

// `count` GEMMs (m × k) · (k × n), one per expert, in `launches` kernels: each at the table's
// fraction for its own shape, the floor paid per launch.
double grouped_gemm_s(const KernelModel& km, double count, double launches, double m, double n, double k, double d) {
  const double one = km.gemm_s(m, n, k, 1, d * (m * k + k * n + m * n)) - km.gemm_floor_s;
  return count * one + launches * km.gemm_floor_s;
}

// A weight GEMM rows × n × k of `count` experts forward, and its two backward GEMMs (d_in, d_W).
void add_projection(MoeLayerKernels& out, const KernelModel& km, double count, double launches, double rows, double n,
                    double k, double d) {
  out.gemm_forward += grouped_gemm_s(km, count, launches, rows, n, k, d);
  out.gemm_backward +=
      grouped_gemm_s(km, count, launches, rows, k, n, d) + grouped_gemm_s(km, count, launches, k, n, rows, d);
  out.kernels_forward += launches;
  out.kernels_backward += 2 * launches;
}

// An MLP of width f (over t) on `count` experts of `rows` rows each: SwiGLU's gate and up as one
// GEMM of 2f, then down; GELU's fc, then proj.
void add_mlp(MoeLayerKernels& out, const KernelModel& km, const MoeDims& x, double count, double launches, double rows,
             double f) {
  add_projection(out, km, count, launches, rows, (x.gated ? 2 : 1) * f / x.t, x.h, x.d);
  add_projection(out, km, count, launches, rows, x.h, f / x.t, x.d);
}

MoeDims moe_dims(const ModelShape& m, const EstimateSettings& s) {
  MoeDims x{};
  x.r = static_cast<double>(s.micro_batch_size) * s.seq / s.layout.cp();  // a cp rank's s/cp tokens
  x.h = static_cast<double>(m.hidden);
  x.d = s.precision == Precision::fp32 || s.activations == ActivationMode::shardscope ? 4 : 2;
  x.E = static_cast<double>(m.experts);
  x.k = static_cast<double>(m.top_k);
  x.t = s.layout.tp();
  x.gated = m.architecture == "llama";
  x.expert_f = static_cast<double>(m.expert_intermediate > 0 ? m.expert_intermediate : m.intermediate);
  x.shared_f = static_cast<double>(m.shared_experts) * x.expert_f;
  // ShardScope's own kernels run each expert's linear as a call of its own.
  x.per_expert_launches = m.engine_config.has_value() && s.activations == ActivationMode::shardscope;
  return x;
}

}  // namespace

double moe_mlp_parameters(const ModelShape& model) {
  if (model.experts == 0) return 0;
  const double h = static_cast<double>(model.hidden);
  const double f = static_cast<double>(model.expert_intermediate > 0 ? model.expert_intermediate : model.intermediate);
  const double shared = static_cast<double>(model.shared_experts) * (model.architecture == "llama" ? 3 : 2) * h * f;
  return static_cast<double>(model.layer_expert_parameters) + h * static_cast<double>(model.experts) + shared;
}

MoeLayerKernels moe_layer_kernels(const ModelShape& model, const EstimateSettings& s, const KernelModel& km) {
  MoeLayerKernels out;
  if (model.experts == 0) return out;
  const MoeDims x = moe_dims(model, s);
  const double ep = s.expert_parallel;
  // Balanced routing: r·k/E rows from each rank to each expert, at most the capacity where the
  // model has one (ShardScope's experts; the capacity's drops pass the residual only).
  double from_each_rank = x.r * x.k / x.E;
  if (model.engine_config)
    from_each_rank =
        std::min(from_each_rank, static_cast<double>(moe_capacity(*model.engine_config, static_cast<int>(x.r))));
  out.rank_experts = x.E / ep;
  out.expert_rows = ep * from_each_rank;
  const double expert_rows_in_all = out.rank_experts * out.expert_rows;  // the rank's experts' rows
  const double kept = x.E * from_each_rank;                              // this rank's tokens' kept copies

  add_projection(out, km, 1, 1, x.r, x.E, x.h, x.d);  // the router's logits
  add_mlp(out, km, x, out.rank_experts, x.launches_per_projection(out.rank_experts), out.expert_rows, x.expert_f);
  if (x.shared_f > 0) add_mlp(out, km, x, 1, 1, x.r, x.shared_f);  // the shared experts, one MLP of their width

  // Memory-bound passes, values of d bytes (each read or written once): the routing's softmax,
  // top-k, permute and combine and their backward (moe_routing_traffic, the clock's formula too),
  // and the activation on the experts' rows (GELU 2f a row forward, 3f backward; SwiGLU 3f, 5f).
  const MoeRoutingTraffic routing = moe_routing_traffic(x.r, x.E, x.k, x.h, kept);
  const double f = x.expert_f / x.t, shared = x.shared_f / x.t;
  const double act_forward = x.gated ? 3 : 2, act_backward = x.gated ? 5 : 3;
  const double forward = routing.forward() + act_forward * (expert_rows_in_all * f + x.r * shared);
  const double backward = routing.backward() + act_backward * (expert_rows_in_all * f + x.r * shared);
  out.memory_forward = km.memory_s(x.d * forward);
  out.memory_backward = km.memory_s(x.d * backward);
  return out;
}

}  // namespace shardscope
