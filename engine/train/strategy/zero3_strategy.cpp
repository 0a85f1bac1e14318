// SPDX-License-Identifier: GPL-3.0-or-later
// ZeRO-3 (P_os+g+p, Rajbhandari et al. 2020): the parameters are sharded by
// unit chunks too (zero_unit_chunks.h for the gradients and the update). The
// rank keeps only its packed chunks; the unit storage all-gathers a unit into
// a temporary buffer before its forward or backward and releases it right
// after (parallel/zero_storage.h: gather_parameters, release_parameters), so
// nothing is gathered after the update. A checkpoint saves and loads the
// rank's packed chunks.
// Per rank: 16Ψ/Nd of model states, fp32 or mixed. No pipeline stages.
#include "train/strategy/zero_unit_chunks.h"
#include "train/trainer_rank.h"

namespace shardscope {

namespace {

class Zero3Strategy final : public UnitChunkStrategy {
 public:
  using UnitChunkStrategy::UnitChunkStrategy;
  std::string_view name() const override { return "ZeRO-3"; }

  // fp32: the packed chunks are the values AdamW updates (mixed: its master weights).
  std::vector<float> packed_master(const TrainerRank& rank) const override {
    if (rank.dtype != DType::f32) return DataParallelStrategy::packed_master(rank);
    const std::int64_t n = rank.optimizer->state_size();
    std::vector<float> out(static_cast<std::size_t>(n));
    rank.backend->download(out.data(), rank.unit_storage->parameters(), n * 4);
    return out;
  }

  std::vector<float> stage_parameters(const TrainerRank& rank, std::vector<float> stage_values) const override {
    return pack_ranges(rank.optimizer->ranges(), stage_values, rank.unit_storage->shard_size());
  }

 protected:
  bool packed_parameters() const override { return true; }
};

}  // namespace

std::unique_ptr<DataParallelStrategy> make_zero3_strategy(const ShardingPlan& plan, const RunConfig& config) {
  return std::make_unique<Zero3Strategy>(plan, config);
}

}  // namespace shardscope
