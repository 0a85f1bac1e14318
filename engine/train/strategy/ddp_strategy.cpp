// SPDX-License-Identifier: GPL-3.0-or-later
// DistributedDataParallel (ZeRO-0): every rank holds the whole model and its
// own optimizer, reads its own rows and updates everything. Gradients are
// averaged by a bucketed ring all-reduce that overlaps the last backward of
// the step (parallel/ddp.h): the reducer is armed before the backward of the
// last micro-batch, each bucket leaves as soon as backward has finished its
// gradients (gradients_ready), and the optimizer waits for the last bucket
// (after_backward). Earlier accumulation steps only add up gradients, as under
// PyTorch's no_sync(). Per rank: 16Ψ of model states in fp32 (2Ψ + 2Ψ + 12Ψ mixed).
// Under expert parallelism a rank holds E/ep experts of each MoE layer, whose
// buckets are averaged over the dp/ep ranks that hold the same experts.
#include "parallel/ddp.h"
#include "train/strategy/strategy.h"
#include "train/trainer_rank.h"

namespace shardscope {

namespace {

class DdpStrategy final : public DataParallelStrategy {
 public:
  using DataParallelStrategy::DataParallelStrategy;
  std::string_view name() const override { return "DDP"; }

  void build(TrainerRank& rank, const AdamWOptions& options) override {
    rank.optimizer = std::make_unique<AdamW>(rank.model->layout(), *rank.backend, rank.ledger, options);
    if (plan_.bucketed_all_reduce()) {  // several data-parallel ranks
      const std::int64_t esize = static_cast<std::int64_t>(dtype_size(rank.dtype));
      const auto bucket_bytes = bucket_cap_bytes(config_.bucket_mb);
      // Expert parallelism: the experts' buckets go to the ranks holding the same experts.
      const bool experts = rank.expert_dp_comm != nullptr;
      reducer_ = std::make_unique<DdpReducer>(*rank.dp_comm,
                                              make_gradient_buckets(rank.model->layout(), bucket_bytes, esize, experts),
                                              rank.clock.get(), rank.expert_dp_comm);
    }
  }

  // The last micro-batch of the last accumulation step arms the reducer.
  void before_backward(TrainerRank& rank, int micro_batch, bool synchronize, const CommTag& tag) override {
    armed_ = reducer_ != nullptr && synchronize && micro_batch == config_.micro_batches - 1;
    if (armed_) reducer_->begin(whole_gradients(rank), rank.dtype, tag);
  }

  void gradients_ready(TrainerRank&, std::int64_t frontier) override {
    if (armed_) reducer_->gradients_ready(frontier);
  }

  // The buckets overlapped the last backward and the pipeline's sends after
  // it (the last gradient send to the previous stage does not wait for them);
  // the optimizer needs them all.
  void after_backward(TrainerRank&, bool synchronize) override {
    armed_ = false;
    if (reducer_ != nullptr && synchronize) reducer_->finish();
  }

  void update(TrainerRank& rank, const CommTag& tag) override {
    flat_update(rank, 0, rank.model->parameter_count(), /*sharded=*/false, tag);
  }

 private:
  std::unique_ptr<DdpReducer> reducer_;  // null with one data-parallel rank
  bool armed_ = false;                   // the reducer runs during this backward
};

}  // namespace

std::unique_ptr<DataParallelStrategy> make_ddp_strategy(const ShardingPlan& plan, const RunConfig& config) {
  return std::make_unique<DdpStrategy>(plan, config);
}

}  // namespace shardscope
