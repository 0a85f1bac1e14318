// SPDX-License-Identifier: GPL-3.0-or-later
// What the strategies share (strategy.h): a rank reads its own rows of the
// global batch, updates from its whole gradients, and saves the parameters its
// optimizer updates; and the one place that chooses a strategy from the plan.
#include "train/strategy/strategy.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "train/pipeline_flow.h"
#include "train/trainer_rank.h"

namespace shardscope {

// The ZeRO paper's stages by what they shard (P_os, P_os+g, P_os+g+p); naive
// DataParallel shards nothing and updates on its master alone.
std::unique_ptr<DataParallelStrategy> make_strategy(const ShardingPlan& plan, const RunConfig& config) {
  if (plan.naive()) return make_naive_data_parallel(plan, config);
  if (plan.shards_parameters()) return make_zero3_strategy(plan, config);
  if (plan.shards_gradients()) return make_zero2_strategy(plan, config);
  if (plan.shards_optimizer_states()) return make_zero1_strategy(plan, config);
  return make_ddp_strategy(plan, config);
}

namespace {
std::int64_t count_scored(const std::vector<std::int32_t>& targets) {
  std::int64_t n = 0;
  for (std::int32_t t : targets) n += t >= 0 ? 1 : 0;
  return n;
}

// Rows [first, first + count) of a (rows, T) token matrix.
std::vector<std::int32_t> rows_of(const std::vector<std::int32_t>& all, int T, std::int64_t first, int count) {
  const auto begin = all.begin() + static_cast<std::ptrdiff_t>(first * T);
  return {begin, begin + static_cast<std::ptrdiff_t>(count) * T};
}
}  // namespace

// Every rank derives the same samples from (seed, step), as every process of a
// real job reads its own data loader.
BatchData DataParallelStrategy::read_global_batch(TrainerRank& rank, const std::function<BatchData()>& read,
                                                  const CommTag&) {
  BatchData global = read();
  rank.global_scored = count_scored(global.targets);
  return global;
}

MicroBatches DataParallelStrategy::micro_batches(TrainerRank& rank, const BatchData& global, int a, const CommTag&) {
  const int T = config_.seq, mb = config_.micro_batch_size(), m = config_.micro_batches;
  const std::int64_t first = rank.dp_rank * (config_.batch / config_.layout.dp());
  MicroBatches out;
  for (int j = 0; j < m; ++j) {
    const std::int64_t row = first + static_cast<std::int64_t>(a * m + j) * mb;
    out.ids.push_back(rows_of(global.input_ids, T, row, mb));
    out.targets.push_back(rows_of(global.targets, T, row, mb));
  }
  return out;
}

void* DataParallelStrategy::whole_gradients(TrainerRank& rank) {
  return rank.dtype != DType::f32 ? rank.unit_storage->gradients() : static_cast<void*>(rank.model->grads());
}

GradientSpan DataParallelStrategy::gradients(TrainerRank& rank) {
  return {whole_gradients(rank), rank.model->parameter_count()};
}

void DataParallelStrategy::flat_update(TrainerRank& rank, std::int64_t begin, std::int64_t end, bool sharded,
                                       const CommTag& tag) {
  Model& model = *rank.model;
  const bool mixed = rank.dtype != DType::f32;
  // A last stage's copy of the tied embedding counts once, on the first stage.
  begin = std::max(begin, tied_embedding_copy(model));
  end = std::max(begin, end);
  void* grads = whole_gradients(rank);
  // Tensor parallelism: the slices of the split parameters from every tp rank,
  // the replicated ones once (parallel/tensor_parallel.h).
  Backend& be = *rank.backend;
  const auto range_squares = [&](std::int64_t offset, std::int64_t count) {
    return mixed ? be.sum_of_squares_16(rank.dtype, static_cast<const std::uint16_t*>(grads) + offset, count)
                 : be.sum_of_squares(model.grads() + offset, count);
  };
  // Expert parallelism: each ep rank's own experts, the replicated parameters once (parallel/expert_parallel.h).
  float squares = rank.ep_comm != nullptr
                      ? expert_parallel_sum_of_squares(model.layout(), begin, end, range_squares, *rank.ep_comm, tag)
                      : tensor_parallel_sum_of_squares(model.layout(), begin, end, range_squares, rank.tp_comm, tag);
  if (sharded) rank.dp_comm->all_reduce_host(&squares, 1, ReduceOp::sum, tag);
  clip_and_step(rank, squares, tag);
}

void DataParallelStrategy::clip_and_step(TrainerRank& rank, float squares, const CommTag& tag) {
  sum_over_stages(rank, squares, tag);
  rank.grad_norm = std::sqrt(static_cast<double>(squares)) / rank.loss_scale;
  const float factor = clip_factor(rank.grad_norm, config_.grad_clip) / rank.loss_scale;
  if (rank.dtype != DType::f32)
    rank.optimizer->step_mixed(static_cast<std::uint16_t*>(rank.unit_storage->parameters()),
                               static_cast<const std::uint16_t*>(whole_gradients(rank)), rank.dtype, rank.lr, factor);
  else
    rank.optimizer->step(rank.model->params(), rank.model->grads(), rank.lr, factor);
}

// Every data-parallel rank runs its own share of the validation micro-batches.
EvaluationShare DataParallelStrategy::evaluation_share(const TrainerRank& rank, std::int64_t) const {
  return {rank.dp_rank, config_.layout.dp()};
}

std::vector<float> DataParallelStrategy::packed_master(const TrainerRank& rank) const {
  const AdamW& opt = *rank.optimizer;
  const std::int64_t n = opt.state_size();
  std::vector<float> out(static_cast<std::size_t>(n));
  if (rank.dtype != DType::f32) {
    rank.backend->download(out.data(), opt.master(), n * 4);
    return out;
  }
  std::vector<float> flat(static_cast<std::size_t>(rank.model->parameter_count()));
  rank.backend->download(flat.data(), rank.model->params(), static_cast<std::int64_t>(flat.size()) * 4);
  return pack_ranges(opt.ranges(), flat, n);
}

std::vector<float> DataParallelStrategy::stage_parameters(const TrainerRank&, std::vector<float> stage_values) const {
  return stage_values;
}

std::vector<float> pack_ranges(const std::vector<AdamW::ShardRange>& ranges, const std::vector<float>& flat,
                               std::int64_t n) {
  std::vector<float> packed(static_cast<std::size_t>(n), 0.0f);
  for (const AdamW::ShardRange& r : ranges)
    std::copy(flat.begin() + r.flat_begin, flat.begin() + r.flat_end, packed.begin() + r.packed_begin);
  return packed;
}

}  // namespace shardscope
