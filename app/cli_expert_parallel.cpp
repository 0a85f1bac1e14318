// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_expert_parallel.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "estimate/formula_text.h"
#include "model/mixture_of_experts.h"
#include "plan/expert_parallel_traffic.h"

namespace shardscope {

void print_expert_parallel_traffic(const Trainer& trainer, const RunConfig& config, const ScheduleEvents& events,
                                   std::int64_t step) {
  if (config.expert_parallel < 2) return;
  const auto measured = measure_expert_parallel_traffic(events.events(), step);
  if (measured.empty()) return;
  std::int64_t low = measured.begin()->second, high = low, sum = 0, first = -1;
  for (const auto& [key, bytes] : measured) {
    low = std::min(low, bytes);
    high = std::max(high, bytes);
    sum += bytes;
    const auto& [src, dst, unit, micro_batch] = key;
    if (first < 0 && src == 0 && dst == 1 && micro_batch == 0) first = bytes;  // the lowest unit: layer 0's
  }
  const ModelConfig& model = trainer.model().config();
  const int tokens = config.micro_batch_size() * config.seq;
  const ExpertParallelTraffic f = expert_parallel_pair_traffic(
      config.expert_parallel, model.experts, moe_capacity(model, tokens), model.channels, 4, config.checkpoint);
  std::printf(
      "expert-parallel all-to-all bytes sent per pair of ranks per MoE layer per micro-batch: rank 0 -> 1 layer 0 "
      "%s, mean %s (%s to %s over %zu pairs, layers and micro-batches; step %lld); formula at the capacity's bound "
      "%s = %s with %s (routing uniform over the experts, each taking its capacity from every rank)\n",
      grouped(first).c_str(), grouped(sum / static_cast<std::int64_t>(measured.size())).c_str(), grouped(low).c_str(),
      grouped(high).c_str(), measured.size(), static_cast<long long>(step), f.formula.c_str(),
      grouped(f.pair_bytes).c_str(), f.values.c_str());
}

}  // namespace shardscope
