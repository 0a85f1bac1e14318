// SPDX-License-Identifier: GPL-3.0-or-later
// ZeRO-1 (P_os, Rajbhandari et al. 2020; the mechanics are parallel/zero.h):
// the stage's flat parameter space is split into Nd contiguous shards and each
// data-parallel rank keeps AdamW's states for its own shard only. Each step
//   1. backward builds the whole gradients on every rank, as under DDP but
//      without overlap,
//   2. once backward is done they are reduce-scattered by the shards: each
//      rank receives the average of its own (combine_gradients),
//   3. the rank updates its shard, the norm summed over the shards (update),
//   4. the updated shards are all-gathered into every rank's whole
//      parameters (after_update).
// Per rank: 4Ψ + 4Ψ + 8Ψ/Nd in fp32 (2Ψ + 2Ψ + 12Ψ/Nd mixed), for the same
// traffic as DDP's all-reduce. Composes with pipeline stages: each stage
// shards its own layers.
#include "parallel/zero.h"
#include "train/strategy/strategy.h"
#include "train/trainer_rank.h"

namespace shardscope {

namespace {

class Zero1Strategy final : public DataParallelStrategy {
 public:
  using DataParallelStrategy::DataParallelStrategy;
  std::string_view name() const override { return "ZeRO-1"; }

  void build(TrainerRank& rank, const AdamWOptions& options) override {
    const RankPlan& place = plan_.rank(rank.rank);
    const ZeroPartition& shard = place.flat_shard;
    rank.optimizer =
        std::make_unique<AdamW>(rank.model->layout(), *rank.backend, rank.ledger, options, shard.begin, shard.end);
    const std::int64_t esize = static_cast<std::int64_t>(dtype_size(rank.dtype));
    if (shard.shard_size * plan_.dp() != place.stage_parameters)  // padded shards travel through staging
      staging_ = Buffer(rank.ledger, MemoryCategory::communication, shard.shard_size * (plan_.dp() + 1) * esize);
  }

  void combine_gradients(TrainerRank& rank, const CommTag& tag) override {
    if (sharded())
      reduce_scatter_gradient_shards(*rank.dp_comm, *rank.backend, whole_gradients(rank), rank.dtype, shard(rank),
                                     staging_, tag);
  }

  void update(TrainerRank& rank, const CommTag& tag) override {
    const bool by_shards = sharded();
    flat_update(rank, by_shards ? shard(rank).begin : 0, by_shards ? shard(rank).end : rank.model->parameter_count(),
                by_shards, tag);
  }

  void after_update(TrainerRank& rank, const CommTag& tag) override {
    if (!plan_.all_gathers_flat_shards()) return;
    void* params = rank.dtype != DType::f32 ? rank.unit_storage->parameters() : rank.model->params();
    all_gather_parameter_shards(*rank.dp_comm, *rank.backend, params, rank.dtype, shard(rank), staging_, tag);
  }

 private:
  // One data-parallel rank: its shard is the whole stage, nothing travels.
  bool sharded() const { return plan_.reduce_scatters_flat_shards(); }
  const ZeroPartition& shard(const TrainerRank& rank) const { return plan_.rank(rank.rank).flat_shard; }

  Buffer staging_;  // padded reduce-scatter and gather, when Ψ does not divide by Nd
};

}  // namespace

std::unique_ptr<DataParallelStrategy> make_zero1_strategy(const ShardingPlan& plan, const RunConfig& config) {
  return std::make_unique<Zero1Strategy>(plan, config);
}

}  // namespace shardscope
