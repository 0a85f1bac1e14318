// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/data_parallel_traffic.h"

#include <string>

namespace shardscope {

namespace {

std::int64_t padded(std::int64_t count, int dp) {
  return (count + dp - 1) / dp * dp;
}

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

std::string n(std::int64_t v) {
  return std::to_string(v);
}

}  // namespace

std::string DataParallelTraffic::text() const {
  return formula + (what.empty() ? "" : ": " + what) + (values.empty() ? "" : "; " + values);
}

DataParallelTraffic data_parallel_traffic(const ShardingRules& plan, const StageUnits& stage, std::int64_t micro_steps,
                                          int extra_embedding_gathers) {
  DataParallelTraffic t;
  const int N = plan.dp();
  const double share = (N - 1.0) / N, K = static_cast<double>(micro_steps);
  const int p = plan.bytes_per_parameter().parameters, g = plan.bytes_per_parameter().gradients;
  if (N == 1) {
    t.formula = "0";
    t.what = "one data-parallel rank";
    return t;
  }
  const std::string pgn = "N = " + n(N) + ", p = " + n(p) + ", g = " + n(g);
  if (plan.naive()) {
    t.travelling = stage.parameters();
    t.bytes = (N - 1.0) * (p + g) * static_cast<double>(t.travelling);
    t.formula = "(N−1)(p + g)Ψ";
    t.what = "rank 0 broadcasts the parameters and gathers every gradient";
    t.values = pgn + ", Ψ = " + n(t.travelling);
  } else if (plan.zero_stage() == 0) {
    t.travelling = stage.parameters();
    t.bytes = 2 * share * g * static_cast<double>(t.travelling);
    t.formula = "2(N−1)/N · gΨ";
    t.what = "ring all-reduce of the gradients (the mean over the ranks)";
    t.values = pgn + ", Ψ = " + n(t.travelling);
  } else if (plan.flat_optimizer_shards()) {
    t.travelling = padded(stage.parameters(), N);
    t.bytes = share * (g + p) * static_cast<double>(t.travelling);
    t.formula = "(N−1)/N · (g + p)Ψ'";
    t.what = "reduce-scatter the gradients, all-gather the updated shards";
    t.values = pgn + ", Ψ' = N·ceil(Ψ/N) = " + n(t.travelling);
  } else if (!plan.shards_parameters()) {
    t.travelling = padded_units(stage, N);
    t.bytes = share * (K * g + p) * static_cast<double>(t.travelling);
    t.formula = "(N−1)/N · (K·g + p)Ψ'";
    t.what = "reduce-scatter every micro-step, all-gather once";
    t.values = pgn + ", K = " + n(micro_steps) + ", Ψ' = N·Σ ceil(n_u/N) = " + n(t.travelling);
  } else {
    t.travelling = padded_units(stage, N);
    const std::int64_t E = padded_embedding(stage, N);
    const double extra = static_cast<double>(extra_embedding_gathers) * p * static_cast<double>(E);
    t.bytes = K * share * ((2.0 * p + g) * static_cast<double>(t.travelling) + extra);
    t.formula = "K(N−1)/N · ((2p + g)Ψ' + e·pE')";
    t.what =
        "all-gather for forward and for backward, reduce-scatter, every micro-step; e: the tied "
        "embeddings' extra gathers";
    t.values = pgn + ", K = " + n(micro_steps) + ", e = " + n(extra_embedding_gathers) +
               ", Ψ' = N·Σ ceil(n_u/N) = " + n(t.travelling) + ", E' = " + n(E);
  }
  return t;
}

}  // namespace shardscope
