// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_context_parallel.h"

#include <cstdio>
#include <set>
#include <string>

#include "estimate/formula_text.h"
#include "plan/context_parallel_traffic.h"

namespace shardscope {

namespace {
// "786,432" or "786,432 / 524,288 / ..." when the ranks differ.
std::string byte_values(const std::set<std::int64_t>& values) {
  std::string text;
  for (const std::int64_t v : values) text += (text.empty() ? "" : " / ") + grouped(v);
  return text.empty() ? "0" : text;
}
}  // namespace

void print_context_parallel_traffic(const Trainer& trainer, const RunConfig& config, const ScheduleEvents& events,
                                    std::int64_t step) {
  if (config.layout.cp() < 2) return;
  // A run resumed from a checkpoint has no events before its first step: measure the first it has.
  std::int64_t first_held = -1;
  for (const Event& e : events.events())
    if (e.purpose == CommPurpose::context_parallel && e.step >= step && (first_held < 0 || e.step < first_held))
      first_held = e.step;
  if (first_held > step) step = first_held;
  std::set<std::int64_t> forward, backward;
  for (const auto& [key, bytes] : measure_context_parallel_traffic(events.events(), step))
    (std::get<3>(key) == ComputeKind::forward ? forward : backward).insert(bytes);
  const ContextParallelTraffic f =
      context_parallel_layer_traffic(config.layout.cp(), config.micro_batch_size(), config.seq,
                                     trainer.model().config().channels / config.layout.tp(), 4, config.checkpoint);
  std::printf(
      "context-parallel (ring attention) bytes sent per rank per layer per micro-batch: forward %s, backward %s "
      "(step %lld; formula %s: %s + %s with %s, --cp-split %s)\n",
      byte_values(forward).c_str(), byte_values(backward).c_str(), static_cast<long long>(step), f.formula.c_str(),
      byte_values({f.forward_bytes}).c_str(), byte_values({f.backward_bytes}).c_str(), f.values.c_str(),
      config.cp_split.c_str());
}

}  // namespace shardscope
