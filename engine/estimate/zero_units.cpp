// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/zero_units.h"

#include <algorithm>

namespace shardscope {

UnitSharding shard_units(const ModelShape& model, int dp) {
  UnitSharding u;
  u.dp = dp;
  u.embedding = model.embedding_parameters;
  u.layer = model.layer_parameters;
  u.head = model.head_parameters;
  u.layers = model.layers;
  u.shard = UnitSharding::chunk(u.embedding, dp) + u.layers * UnitSharding::chunk(u.layer, dp) +
            UnitSharding::chunk(u.head, dp);
  u.largest_chunk = UnitSharding::chunk(u.largest_unit(), dp);
  return u;
}

std::int64_t UnitSharding::largest_unit() const {
  return std::max({embedding, layers > 0 ? layer : 0, head});
}

std::int64_t UnitSharding::optimizer_elements(int dp_rank) const {
  // Units in flat order: embeddings, layers, head. A chunk that is all padding adds no range.
  auto mine = [&](std::int64_t n) { return std::clamp<std::int64_t>(n - dp_rank * chunk(n, dp), 0, chunk(n, dp)); };
  std::int64_t offset = 0, end = 0;
  auto add = [&](std::int64_t n) {
    if (mine(n) > 0) end = offset + mine(n);
    offset += chunk(n, dp);
  };
  add(embedding);
  for (std::int64_t l = 0; l < layers; ++l) add(layer);
  add(head);
  return end;
}

std::int64_t UnitSharding::unit_buffer_peak(int stage) const {
  const std::int64_t E = padded(embedding), L = layers > 0 ? padded(layer) : 0, H = padded(head);
  if (stage >= 3) return std::max(2 * E + 2 * H, E + 2 * L);
  return E + std::max(H, L);
}

std::int64_t UnitSharding::mixed_unit_buffer_peak(int stage) const {
  const std::int64_t E = padded(embedding), L = layers > 0 ? padded(layer) : 0, H = padded(head);
  if (stage >= 3) return std::max(E + H, L);
  return std::max({E, L, H});
}

}  // namespace shardscope
