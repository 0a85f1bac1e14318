// SPDX-License-Identifier: GPL-3.0-or-later
// ZeRO stages 2 and 3 as ShardScope's runtime shards them
// (parallel/zero_storage.h): unit by unit. The units are the embeddings, each
// layer and the head; unit u of n_u parameters is split into Nd chunks of
// ceil(n_u / Nd), and rank r owns chunk r of every unit. So every rank holds
//   S = Σ_u ceil(n_u / Nd)          gradient (and, stage 3, parameter) elements,
// padding included, and its optimizer states cover its real elements packed in
// that order. Temporary whole-unit buffers (padded to Nd chunks) count as
// `communication`: the gradient of a unit while backward builds it, and under
// stage 3 the gathered parameters of a unit while it is used.
#pragma once

#include <cstdint>
#include <vector>

#include "estimate/model_shape.h"

namespace shardscope {

struct UnitSharding {
  int chunks = 1;                                   // Nd: each unit is split into one chunk per data-parallel rank
  std::int64_t embedding = 0, layer = 0, head = 0;  // n_u of each kind of unit
  std::int64_t layers = 0;
  std::int64_t shard = 0;          // S = Σ_u ceil(n_u / Nd): every rank's gradient (parameter) shard
  std::int64_t largest_chunk = 0;  // the largest chunk one reduce-scatter delivers (sizes its staging)

  static std::int64_t chunk(std::int64_t n, int dp) { return (n + dp - 1) / dp; }
  std::int64_t padded(std::int64_t n) const { return chunk(n, chunks) * chunks; }  // a whole unit, Nd chunks
  // Peak elements of the temporary whole-unit buffers, backward being the peak
  // (gathers_parameters: ZeRO-3, ShardingRules::shards_parameters):
  //   stage 2: the embedding gradient (live through all of backward) plus the head's or a layer's;
  //   stage 3: also their gathered parameters: max(2E + 2H, E + 2L) (padded sizes).
  std::int64_t unit_buffer_peak(bool gathers_parameters) const;
  // The same under mixed precision, where the whole-unit fp32 gradients count as
  // `workspace` and a unit's gradient is rounded to 16 bits (a padded whole-unit
  // buffer) just before its reduce-scatter; every unit's gathered parameters are
  // released before that: stage 2: max(E, L, H) (the rounded gradient, or the
  // all-gather staging after the step); stage 3: max(E + H, L) (gathered).
  std::int64_t mixed_unit_buffer_peak(bool gathers_parameters) const;
  // The largest unit (stage 3 initialises one whole unit at a time, in `workspace`).
  std::int64_t largest_unit() const;
};

// The units of the whole model (ZeRO-2/3 run without pipeline stages), as one
// tensor-parallel rank holds them with tp > 1 (stage_units' slices).
UnitSharding shard_units(const ModelShape& model, int dp, int tp = 1);

}  // namespace shardscope
