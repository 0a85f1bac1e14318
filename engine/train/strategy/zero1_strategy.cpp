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
// shards its own layers. Under expert parallelism the dense parameters and the
// rank's experts are sharded apart, each over the ranks that hold it
// (parallel/zero_expert_parallel.h): every step above runs once per kind.
#include <algorithm>

#include "parallel/zero.h"
#include "parallel/zero_expert_parallel.h"
#include "train/pipeline_flow.h"
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
    if (rank.expert_dp_comm != nullptr) return build_expert_parallel(rank, options);
    const ZeroPartition& shard = place.flat_shard;
    rank.optimizer =
        std::make_unique<AdamW>(rank.model->layout(), *rank.backend, rank.ledger, options, shard.begin, shard.end);
    const std::int64_t esize = static_cast<std::int64_t>(dtype_size(rank.dtype));
    if (shard.shard_size * plan_.dp() != place.stage_parameters)  // padded shards travel through staging
      staging_ = Buffer(rank.ledger, MemoryCategory::communication, shard.shard_size * (plan_.dp() + 1) * esize);
  }

  void combine_gradients(TrainerRank& rank, const CommTag& tag) override {
    if (rank.expert_dp_comm != nullptr) {  // the dense shards over dp, the experts' over the expert-data-parallel group
      const RankPlan& place = plan_.rank(rank.rank);
      void* grads = whole_gradients(rank);
      reduce_scatter_space(*rank.dp_comm, *rank.backend, grads, rank.dtype, dense_, place.flat_shard, staging_, tag);
      reduce_scatter_space(*rank.expert_dp_comm, *rank.backend, grads, rank.dtype, experts_, place.expert_shard,
                           staging_, tag);
      return;
    }
    if (sharded())
      reduce_scatter_gradient_shards(*rank.dp_comm, *rank.backend, whole_gradients(rank), rank.dtype, shard(rank),
                                     staging_, tag);
  }

  void update(TrainerRank& rank, const CommTag& tag) override {
    if (rank.expert_dp_comm != nullptr) return expert_parallel_update(rank, tag);
    const bool by_shards = sharded();
    flat_update(rank, by_shards ? shard(rank).begin : 0, by_shards ? shard(rank).end : rank.model->parameter_count(),
                by_shards, tag);
  }

  void after_update(TrainerRank& rank, const CommTag& tag) override {
    if (!plan_.all_gathers_flat_shards()) return;
    void* params = rank.dtype != DType::f32 ? rank.unit_storage->parameters() : rank.model->params();
    if (rank.expert_dp_comm != nullptr) {
      const RankPlan& place = plan_.rank(rank.rank);
      all_gather_space(*rank.dp_comm, *rank.backend, params, rank.dtype, dense_, place.flat_shard, staging_, tag);
      all_gather_space(*rank.expert_dp_comm, *rank.backend, params, rank.dtype, experts_, place.expert_shard, staging_,
                       tag);
      return;
    }
    all_gather_parameter_shards(*rank.dp_comm, *rank.backend, params, rank.dtype, shard(rank), staging_, tag);
  }

 private:
  // One data-parallel rank: its shard is the whole stage, nothing travels.
  bool sharded() const { return plan_.reduce_scatters_flat_shards(); }
  const ZeroPartition& shard(const TrainerRank& rank) const { return plan_.rank(rank.rank).flat_shard; }

  // Expert parallelism: AdamW over the rank's dense shard and expert shard (in
  // flat order), and one staging buffer for the larger packed space.
  void build_expert_parallel(TrainerRank& rank, const AdamWOptions& options) {
    const RankPlan& place = plan_.rank(rank.rank);
    const ParameterLayout& layout = rank.model->layout();
    dense_ = parameter_runs(layout, false);
    experts_ = parameter_runs(layout, true);
    std::vector<FlatRun> mine = space_ranges(dense_, place.flat_shard.begin, place.flat_shard.end);
    for (const FlatRun& r : space_ranges(experts_, place.expert_shard.begin, place.expert_shard.end)) mine.push_back(r);
    std::sort(mine.begin(), mine.end(), [](const FlatRun& a, const FlatRun& b) { return a.begin < b.begin; });
    std::vector<AdamW::ShardRange> ranges;
    std::int64_t packed = 0;
    for (const FlatRun& r : mine) {
      ranges.push_back({r.begin, r.end, packed});
      packed += r.end - r.begin;
    }
    rank.optimizer = std::make_unique<AdamW>(layout, *rank.backend, rank.ledger, options, ranges);
    const std::int64_t esize = static_cast<std::int64_t>(dtype_size(rank.dtype));
    const std::int64_t dense = place.flat_shard.shard_size * rank.dp_comm->size(),
                       experts = place.expert_shard.shard_size * rank.expert_dp_comm->size();
    staging_ =
        Buffer(rank.ledger, MemoryCategory::communication,
               std::max(rank.dp_comm->size() > 1 ? dense : 0, rank.expert_dp_comm->size() > 1 ? experts : 0) * esize);
  }

  // The squares of the rank's own elements (its dense and expert shards),
  // summed over the dp ranks: every dense element once, and every expert once
  // (each expert-data-parallel group covers its experts, the groups the rest).
  // A last pipeline stage's copy of the tied embedding counts on the first stage only.
  void expert_parallel_update(TrainerRank& rank, const CommTag& tag) {
    const void* grads = whole_gradients(rank);
    Backend& be = *rank.backend;
    const std::int64_t tied_copy = tied_embedding_copy(*rank.model);
    double squares = 0.0;
    for (const AdamW::ShardRange& r : rank.optimizer->ranges()) {
      const std::int64_t begin = std::max(r.flat_begin, tied_copy), n = r.flat_end - begin;
      if (n <= 0) continue;
      squares += rank.dtype != DType::f32
                     ? be.sum_of_squares_16(rank.dtype, static_cast<const std::uint16_t*>(grads) + begin, n)
                     : be.sum_of_squares(static_cast<const float*>(grads) + begin, n);
    }
    auto total = static_cast<float>(squares);
    rank.dp_comm->all_reduce_host(&total, 1, ReduceOp::sum, tag);
    clip_and_step(rank, total, tag);
  }

  Buffer staging_;  // padded reduce-scatter and gather, when Ψ does not divide by Nd
  std::vector<FlatRun> dense_, experts_;  // expert parallelism: the runs of each kind
};

}  // namespace

std::unique_ptr<DataParallelStrategy> make_zero1_strategy(const ShardingPlan& plan, const RunConfig& config) {
  return std::make_unique<Zero1Strategy>(plan, config);
}

}  // namespace shardscope
