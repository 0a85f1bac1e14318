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

// The norm over every rank's chunks (and tensor-parallel slices), then AdamW on this rank's.
void UnitChunkStrategy::update(TrainerRank& rank, const CommTag& tag) {
  const GradientSpan grads = gradients(rank);
  const bool mixed = rank.dtype != DType::f32, packed = packed_parameters();
  Backend& be = *rank.backend;
  const auto packed_squares = [&](std::int64_t offset, std::int64_t count) {  // offset into the packed chunks
    return mixed ? be.sum_of_squares_16(rank.dtype, static_cast<const std::uint16_t*>(grads.data) + offset, count)
                 : be.sum_of_squares(static_cast<const float*>(grads.data) + offset, count);
  };
  float squares = static_cast<float>(packed_squares(0, grads.count));
  if (rank.tp_comm != nullptr) {  // the chunks cut through parameters: count the replicated ones once over tp
    double mine = 0.0;
    for (const AdamW::ShardRange& r : rank.optimizer->ranges())
      mine += tensor_parallel_squares(
          rank.model->layout(), r.flat_begin, r.flat_end,
          [&](std::int64_t flat, std::int64_t count) {
            return packed_squares(r.packed_begin + flat - r.flat_begin, count);
          },
          rank.tp_rank == 0);
    squares = static_cast<float>(mine);
    rank.tp_comm->all_reduce_host(&squares, 1, ReduceOp::sum, tag);
  }
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
