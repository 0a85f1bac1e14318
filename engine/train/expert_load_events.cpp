// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/expert_load_events.h"

#include <algorithm>

namespace shardscope {

std::vector<Event> expert_load_events(const ModelConfig& model, const MoeStats& stats, std::int64_t step,
                                      std::int64_t time_ns) {
  const int E = model.experts, k = model.top_k;
  // The choices each MoE layer's experts kept (zero: a layer these stats did not count).
  std::vector<std::int64_t> kept(static_cast<std::size_t>(model.moe_layer_count()), 0);
  for (std::size_t i = 0; i < kept.size(); ++i)
    for (int e = 0; e < E; ++e) kept[i] += stats.tokens_per_expert[i * static_cast<std::size_t>(E) + e];
  const auto moe_layers =
      static_cast<std::int64_t>(std::count_if(kept.begin(), kept.end(), [](auto n) { return n > 0; }));
  if (moe_layers == 0 || stats.aux_loss_terms == 0) return {};
  const std::int64_t forwards = stats.aux_loss_terms / moe_layers;  // each forward counts every MoE layer once
  const std::int64_t routed_per_layer = stats.routed / moe_layers;
  const auto tokens_per_forward = static_cast<int>(routed_per_layer / (forwards * k));
  const std::int64_t places = std::int64_t{moe_capacity(model, tokens_per_forward)} * forwards;
  std::vector<Event> events;
  for (int l = 0, moe_index = 0; l < model.layers; ++l) {
    if (!model.moe_layer(l)) continue;
    const std::size_t base = static_cast<std::size_t>(moe_index) * static_cast<std::size_t>(E);
    const std::int64_t layer_kept = kept[static_cast<std::size_t>(moe_index++)];
    if (layer_kept == 0) continue;
    for (int e = 0; e < E; ++e) {
      Event ev;
      ev.kind = EventKind::expert_load;
      ev.step = step;
      ev.start_ns = ev.end_ns = time_ns;
      ev.layer = l;
      ev.expert = e;
      ev.expert_tokens = stats.tokens_per_expert[base + static_cast<std::size_t>(e)];
      ev.expert_capacity = places;
      ev.routed = routed_per_layer;
      ev.dropped = routed_per_layer - layer_kept;
      ev.aux_loss = static_cast<float>(stats.aux_loss());
      events.push_back(ev);
    }
  }
  return events;
}

}  // namespace shardscope
