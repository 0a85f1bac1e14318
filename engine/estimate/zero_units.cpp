// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/zero_units.h"

#include <algorithm>

namespace shardscope {

UnitSharding shard_units(const ModelShape& model, int dp, int tp) {
  UnitSharding u;
  u.chunks = dp;
  u.embedding = model.embedding_parameters;
  u.layer = model.layer_parameters;
  u.head = model.head_parameters;
  u.layers = model.layers;
  if (tp > 1) {  // one tp rank's units: embeddings first, the head last (one stage)
    const std::vector<PlanUnit> units = stage_units(model, 1, tp).front().units;
    u.embedding = units.front().numel;
    u.layer = model.layers > 0 ? units[1].numel : 0;
    u.head = units.back().numel;
  }
  u.shard = UnitSharding::chunk(u.embedding, dp) + u.layers * UnitSharding::chunk(u.layer, dp) +
            UnitSharding::chunk(u.head, dp);
  u.largest_chunk = UnitSharding::chunk(u.largest_unit(), dp);
  return u;
}

std::int64_t UnitSharding::largest_unit() const {
  return std::max({embedding, layers > 0 ? layer : 0, head});
}

std::int64_t UnitSharding::unit_buffer_peak(bool gathers_parameters) const {
  const std::int64_t E = padded(embedding), L = layers > 0 ? padded(layer) : 0, H = padded(head);
  if (gathers_parameters) return std::max(2 * E + 2 * H, E + 2 * L);
  return E + std::max(H, L);
}

std::int64_t UnitSharding::mixed_unit_buffer_peak(bool gathers_parameters) const {
  const std::int64_t E = padded(embedding), L = layers > 0 ? padded(layer) : 0, H = padded(head);
  if (gathers_parameters) return std::max(E + H, L);
  return std::max({E, L, H});
}

}  // namespace shardscope
