// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/data_parallel_traffic.h"

#include <string>

namespace shardscope {

namespace {

std::int64_t padded(std::int64_t n, int dp) { return (n + dp - 1) / dp * dp; }

// Ψ' of ZeRO-2/3: every unit padded to N chunks; and the embedding unit's E'.
std::int64_t padded_units(const StageUnits& stage, int dp) {
  std::int64_t n = 0;
  for (const PlanUnit& u : stage.units) n += padded(u.numel, dp);
  return n;
}
std::int64_t padded_embedding(const StageUnits& stage, int dp) {
  for (const PlanUnit& u : stage.units)
    if (u.id == 0) return padded(u.numel, dp);
  return 0;
}

std::string psi_text(std::int64_t psi, const std::string& how) {
  return ", Ψ' = " + std::to_string(psi) + (how.empty() ? "" : " (" + how + ")");
}

}  // namespace

DataParallelTraffic data_parallel_traffic(const ShardingRules& plan, const StageUnits& stage,
                                          std::int64_t micro_steps, int extra_embedding_gathers) {
  DataParallelTraffic t;
  const int N = plan.dp();
  const double n = N, share = (n - 1) / n, K = static_cast<double>(micro_steps);
  const double p = plan.bytes_per_parameter().parameters, g = plan.bytes_per_parameter().gradients;
  const std::string b = " (p = " + std::to_string(static_cast<int>(p)) + ", g = " +
                        std::to_string(static_cast<int>(g)) + " bytes, N = " + std::to_string(N) + ")";
  if (N == 1) {
    t.formula = "0: one data-parallel rank";
    return t;
  }
  if (plan.naive()) {
    t.travelling = stage.parameters();
    t.bytes = (n - 1) * (p + g) * static_cast<double>(t.travelling);
    t.formula = "(N−1)(p + g)Ψ: rank 0 broadcasts the parameters and gathers every gradient" + b +
                psi_text(t.travelling, "");
  } else if (plan.zero_stage() == 0) {
    t.travelling = stage.parameters();
    t.bytes = 2 * share * g * static_cast<double>(t.travelling);
    t.formula = "2(N−1)/N · gΨ': ring all-reduce of the gradients" + b + psi_text(t.travelling, "mean over the ranks");
  } else if (plan.flat_optimizer_shards()) {
    t.travelling = padded(stage.parameters(), N);
    t.bytes = share * (g + p) * static_cast<double>(t.travelling);
    t.formula = "(N−1)/N · (g + p)Ψ': reduce-scatter the gradients, all-gather the updated shards" + b +
                psi_text(t.travelling, "N·ceil(Ψ/N)");
  } else if (!plan.shards_parameters()) {
    t.travelling = padded_units(stage, N);
    t.bytes = share * (K * g + p) * static_cast<double>(t.travelling);
    t.formula = "(N−1)/N · (K·g + p)Ψ': reduce-scatter every micro-step, all-gather once, K = " +
                std::to_string(micro_steps) + b + psi_text(t.travelling, "N·Σ ceil(n_u/N)");
  } else {
    t.travelling = padded_units(stage, N);
    const double extra = extra_embedding_gathers * p * static_cast<double>(padded_embedding(stage, N));
    t.bytes = K * share * ((2 * p + g) * static_cast<double>(t.travelling) + extra);
    t.formula = "K(N−1)/N · ((2p + g)Ψ' + e·pE'): all-gather for forward and backward, reduce-scatter, K = " +
                std::to_string(micro_steps) + ", e = " + std::to_string(extra_embedding_gathers) +
                " extra gathers of the tied embeddings, E' = " + std::to_string(padded_embedding(stage, N)) + b +
                psi_text(t.travelling, "N·Σ ceil(n_u/N)");
  }
  return t;
}

}  // namespace shardscope
