// SPDX-License-Identifier: GPL-3.0-or-later
// ZeRO-2 (P_os+g, Rajbhandari et al. 2020): optimizer states and gradients
// sharded by unit chunks (zero_unit_chunks.h: backward reduce-scatters each
// unit's gradient as it finishes; the rank updates its chunks). Every rank
// still holds the whole parameters, so after the update each rank's updated
// chunks are all-gathered into everyone's (after_update).
// Per rank: 4Ψ + 4Ψ/Nd + 8Ψ/Nd in fp32 (2Ψ + 14Ψ/Nd mixed). No pipeline stages.
#include "train/strategy/zero_unit_chunks.h"
#include "train/trainer_rank.h"

namespace shardscope {

namespace {

class Zero2Strategy final : public UnitChunkStrategy {
 public:
  using UnitChunkStrategy::UnitChunkStrategy;
  std::string_view name() const override { return "ZeRO-2"; }

  void after_update(TrainerRank& rank, const CommTag& tag) override { rank.unit_storage->all_gather_parameters(tag); }

 protected:
  bool packed_parameters() const override { return false; }
};

}  // namespace

std::unique_ptr<DataParallelStrategy> make_zero2_strategy(const ShardingPlan& plan, const RunConfig& config) {
  return std::make_unique<Zero2Strategy>(plan, config);
}

}  // namespace shardscope
