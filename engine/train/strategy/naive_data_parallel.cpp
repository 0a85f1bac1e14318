// SPDX-License-Identifier: GPL-3.0-or-later
// Naive data parallelism as torch.nn.DataParallel runs it (the mechanics are
// parallel/data_parallel.h): the master (data-parallel rank 0) alone reads the
// data and holds an optimizer. Each step it
//   1. replicates its parameters to every replica and broadcasts the loss
//      denominator (read_global_batch),
//   2. scatters every micro-batch's rows to the replicas (micro_batches),
//   3. after backward, gathers every replica's gradients and averages them
//      itself (combine_gradients),
//   4. updates alone (update); the replicas get the new parameters at step 1 of
//      the next step, so the master also evaluates alone.
// Rank 0 moves (N-1) x the model each way per step and holds N gradient
// copies: the bottleneck DDP's ring removes. It runs without pipeline stages.
#include "parallel/data_parallel.h"
#include "train/strategy/strategy.h"
#include "train/trainer_rank.h"

namespace shardscope {

namespace {

class NaiveDataParallel final : public DataParallelStrategy {
 public:
  using DataParallelStrategy::DataParallelStrategy;
  std::string_view name() const override { return "naive DataParallel"; }

  void build(TrainerRank& rank, const AdamWOptions& options) override {
    if (!master(rank)) return;  // a replica: the master updates for it
    rank.optimizer = std::make_unique<AdamW>(rank.model->layout(), *rank.backend, rank.ledger, options);
    const std::int64_t esize = static_cast<std::int64_t>(dtype_size(rank.dtype));
    if (replicas()) {  // the master gathers every replica's gradients
      const std::int64_t P = plan_.rank(rank.rank).stage_parameters;
      gather_buffer_ = Buffer(rank.ledger, MemoryCategory::communication, plan_.dp() * P * esize);
    }
  }

  BatchData read_global_batch(TrainerRank& rank, const std::function<BatchData()>& read, const CommTag& tag) override {
    BatchData global;
    if (master(rank)) global = read();
    std::int64_t count = 0;
    for (std::int32_t t : global.targets) count += t >= 0 ? 1 : 0;
    float scored = static_cast<float>(count);  // the replicas learn it from the master
    if (replicas()) {
      replicate_parameters(*rank.dp_comm,
                           rank.unit_storage != nullptr ? rank.unit_storage->parameters() : rank.model->params(),
                           rank.model->parameter_count(), rank.dtype, tag);
      rank.dp_comm->broadcast_host(&scored, 1, 0, tag);
    }
    rank.global_scored = static_cast<std::int64_t>(scored);
    return global;
  }

  MicroBatches micro_batches(TrainerRank& rank, const BatchData& global, int a, const CommTag& step) override {
    if (!replicas()) return DataParallelStrategy::micro_batches(rank, global, a, step);
    const int dp = plan_.dp(), T = config_.seq, mb = config_.micro_batch_size(), m = config_.micro_batches;
    const std::int64_t rows = static_cast<std::int64_t>(mb) * T, per_rank = config_.batch / dp;
    MicroBatches out;
    out.ids.resize(static_cast<std::size_t>(m));
    out.targets.resize(static_cast<std::size_t>(m));
    for (int j = 0; j < m; ++j) {
      const std::int64_t within = static_cast<std::int64_t>(a * m + j) * mb;
      std::vector<std::int32_t> all_ids, all_targets;  // the master's rows for every replica
      for (int d = 0; master(rank) && d < dp; ++d) {
        const auto at = static_cast<std::ptrdiff_t>((d * per_rank + within) * T);
        all_ids.insert(all_ids.end(), global.input_ids.begin() + at, global.input_ids.begin() + at + rows);
        all_targets.insert(all_targets.end(), global.targets.begin() + at, global.targets.begin() + at + rows);
      }
      CommTag tag = step;
      tag.micro_batch = a * m + j;
      scatter_tokens(*rank.dp_comm, all_ids, out.ids[static_cast<std::size_t>(j)], rows, tag);
      scatter_tokens(*rank.dp_comm, all_targets, out.targets[static_cast<std::size_t>(j)], rows, tag);
    }
    return out;
  }

  void combine_gradients(TrainerRank& rank, const CommTag& tag) override {
    if (replicas())
      reduce_gradients_to_master(*rank.dp_comm, *rank.backend, whole_gradients(rank), rank.model->parameter_count(),
                                 rank.dtype, gather_buffer_, tag);
  }

  void update(TrainerRank& rank, const CommTag& tag) override {
    if (rank.optimizer == nullptr) return;  // a replica
    flat_update(rank, 0, rank.model->parameter_count(), /*sharded=*/false, tag);
  }

  EvaluationShare evaluation_share(const TrainerRank& rank, std::int64_t count) const override {
    return {master(rank) ? 0 : count, 1};  // only the master holds the updated parameters
  }

 private:
  static bool master(const TrainerRank& rank) { return rank.dp_rank == 0; }
  bool replicas() const { return plan_.dp() > 1; }

  Buffer gather_buffer_;  // the master's: every replica's gradients (dp x P)
};

}  // namespace

std::unique_ptr<DataParallelStrategy> make_naive_data_parallel(const ShardingPlan& plan, const RunConfig& config) {
  return std::make_unique<NaiveDataParallel>(plan, config);
}

}  // namespace shardscope
