// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/strategy/zero_unit_chunks.h"

#include <cmath>

#include "train/trainer_rank.h"

namespace shardscope {

namespace {
// AdamW's ranges: the rank's real elements of every unit chunk, at their flat
// offsets and packed one after another.
std::vector<AdamW::ShardRange> optimizer_ranges(const RankPlan& place) {
  std::vector<AdamW::ShardRange> ranges;
  for (const UnitChunk& c : place.chunks) {
    const std::int64_t begin = c.begin + place.dp_rank * c.chunk;
    if (c.mine > 0) ranges.push_back({begin, begin + c.mine, c.packed});
  }
  return ranges;
}
}  // namespace

void UnitChunkStrategy::build(TrainerRank& rank, const AdamWOptions& options) {
  rank.optimizer = std::make_unique<AdamW>(rank.model->layout(), *rank.backend, rank.ledger, options,
                                           optimizer_ranges(plan_.rank(rank.rank)));
}

GradientSpan UnitChunkStrategy::gradients(TrainerRank& rank) {
  return {rank.unit_storage->gradients(), rank.unit_storage->gradient_count()};
}

// The norm over every rank's chunks, then AdamW on this rank's.
void UnitChunkStrategy::update(TrainerRank& rank, const CommTag& tag) {
  const GradientSpan grads = gradients(rank);
  const bool mixed = rank.dtype != DType::f32, packed = packed_parameters();
  float squares = static_cast<float>(
      mixed ? rank.backend->sum_of_squares_16(rank.dtype, static_cast<const std::uint16_t*>(grads.data), grads.count)
            : rank.backend->sum_of_squares(static_cast<const float*>(grads.data), grads.count));
  rank.dp_comm->all_reduce_host(&squares, 1, ReduceOp::sum, tag);
  rank.grad_norm = std::sqrt(static_cast<double>(squares)) / rank.loss_scale;
  const float factor = clip_factor(rank.grad_norm, config_.grad_clip) / rank.loss_scale;
  if (mixed)
    rank.optimizer->step_mixed(static_cast<std::uint16_t*>(rank.unit_storage->parameters()),
                               static_cast<const std::uint16_t*>(grads.data), rank.dtype, rank.lr, factor, packed,
                               /*grads_packed=*/true);
  else
    rank.optimizer->step(packed ? static_cast<float*>(rank.unit_storage->parameters()) : rank.model->params(),
                         static_cast<const float*>(grads.data), rank.lr, factor, packed, /*grads_packed=*/true);
}

}  // namespace shardscope
