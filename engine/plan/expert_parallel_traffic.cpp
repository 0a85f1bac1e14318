// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/expert_parallel_traffic.h"

namespace shardscope {

ExpertParallelTraffic expert_parallel_pair_traffic(int ep, int experts, int capacity, int hidden, int element_bytes,
                                                   bool recompute) {
  ExpertParallelTraffic t;
  t.values = "e = " + std::to_string(element_bytes) + ", E = " + std::to_string(experts) +
             ", ep = " + std::to_string(ep) + ", c = " + std::to_string(capacity) + ", h = " + std::to_string(hidden);
  t.formula = recompute ? "e · (2 E/ep + 6 · (E/ep) · c · h)" : "e · (E/ep + 4 · (E/ep) · c · h)";
  if (ep <= 1) return t;
  const std::int64_t local = experts / ep;
  t.rows = local * capacity;
  const std::int64_t rows_both_ways = 2 * t.rows;  // out + back
  t.pair_bytes = std::int64_t{element_bytes} *
                 (recompute ? 2 * local + 3 * rows_both_ways * hidden : local + 2 * rows_both_ways * hidden);
  return t;
}

std::map<ExpertParallelKey, std::int64_t> measure_expert_parallel_traffic(std::span<const Event> events,
                                                                          std::int64_t step) {
  std::map<ExpertParallelKey, std::int64_t> bytes;
  for (const Event& e : events)
    if (e.kind == EventKind::comm_span && e.step == step && e.purpose == CommPurpose::expert_parallel && e.unit >= 1 &&
        e.src >= 0 && e.dst >= 0 && e.src != e.dst && e.op == CommOp::send)
      bytes[{e.src, e.dst, e.unit, e.micro_batch}] += e.bytes;
  return bytes;
}

namespace {
DataParallelTraffic zero1_expert_traffic(const ShardingRules& rules, int ep, std::int64_t dense, std::int64_t experts) {
  const int N = rules.dp(), Ne = N / ep;
  const int g = rules.bytes_per_parameter().gradients, p = rules.bytes_per_parameter().parameters;
  const std::int64_t padded_dense = (dense + N - 1) / N * N, padded_experts = (experts + Ne - 1) / Ne * Ne;
  DataParallelTraffic t;
  t.bytes = (N - 1.0) / N * (g + p) * static_cast<double>(padded_dense) +
            (Ne - 1.0) / Ne * (g + p) * static_cast<double>(padded_experts);
  t.travelling = padded_dense + padded_experts;
  t.formula = "(N−1)/N · (g + p)Ψ_d' + (N'−1)/N' · (g + p)Ψ_e'";
  t.values = "N = " + std::to_string(N) + ", N' = N/ep = " + std::to_string(Ne) + ", g = " + std::to_string(g) +
             ", p = " + std::to_string(p) + ", Ψ_d' = N·ceil(Ψ_d/N) = " + std::to_string(padded_dense) +
             ", Ψ_e' = N'·ceil(Ψ_e/N') = " + std::to_string(padded_experts);
  t.what =
      "reduce-scatter the gradients and all-gather the updated shards, the dense ones over the data-parallel "
      "ranks, the experts' over the ranks holding the same experts";
  return t;
}
}  // namespace

DataParallelTraffic expert_data_parallel_traffic(const ShardingRules& rules, int ep, std::int64_t dense,
                                                 std::int64_t experts) {
  const int dp = rules.dp(), gradient_bytes = rules.bytes_per_parameter().gradients;
  if (rules.flat_optimizer_shards()) return zero1_expert_traffic(rules, ep, dense, experts);
  DataParallelTraffic t;
  const double N = dp, Ne = static_cast<double>(dp) / ep, g = gradient_bytes;
  t.bytes = 2 * (N - 1) / N * g * static_cast<double>(dense) + 2 * (Ne - 1) / Ne * g * static_cast<double>(experts);
  t.travelling = dense + experts;
  t.formula = "2(N−1)/N · gΨ_d + 2(N/ep−1)/(N/ep) · gΨ_e";
  t.values = "N = " + std::to_string(dp) + ", ep = " + std::to_string(ep) + ", g = " + std::to_string(gradient_bytes) +
             ", Ψ_d = " + std::to_string(dense) + ", Ψ_e = " + std::to_string(experts);
  t.what =
      "ring all-reduce of the dense gradients over the data-parallel ranks, of the experts' over the ranks "
      "holding the same experts";
  return t;
}

}  // namespace shardscope
