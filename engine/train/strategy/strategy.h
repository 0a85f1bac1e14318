// SPDX-License-Identifier: GPL-3.0-or-later
// How the data-parallel ranks of a stage share the work: naive DataParallel,
// DDP, ZeRO-1, ZeRO-2 or ZeRO-3, each in its own file beside this one. The
// trainer's step (train/rank_step.cpp) calls the hooks below in this order and
// never asks which strategy runs; make_strategy is the one place that chooses,
// from the sharding plan's rules.
//
//   build                 the optimizer over what the rank updates, its buffers
//   read_global_batch     the samples of the step and the loss denominator
//   micro_batches         this rank's rows of each micro-batch
//   before_backward       per micro-batch, before its backward
//   gradients_ready       from backward: the gradients from a flat offset on are final
//   after_backward        after the stage's schedule (forward and backward of every micro-batch)
//   combine_gradients     once every accumulation step is done (after the pipeline's tied-embedding sum)
//   gradients             what the rank updates from (the fp16 overflow verdict reads them)
//   update                global norm, clipping, AdamW
//   after_update          the updated shards back to every rank
// and outside the step: evaluation_share (which validation micro-batches the
// rank runs), packed_master and stage_parameters (what a checkpoint saves and
// loads).
//
// Each rank has its own strategy object (build_rank makes it), so a strategy
// keeps its per-rank state (DDP's reducer, the gather buffers) itself. The
// pipeline (train/pipeline_flow.cpp) composes with DDP and ZeRO-1: it runs the
// stage's schedule, calling the backward hooks, and sums the tied embedding's
// gradients between the first and the last stage before combine_gradients.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "data/text_dataset.h"
#include "parallel/communicator.h"
#include "plan/sharding_plan.h"
#include "train/adamw.h"
#include "train/trainer.h"

namespace shardscope {

using TrainerRank = Trainer::Rank;

// One accumulation step's inputs on a rank: (m) micro-batches of (micro-batch x T) tokens.
struct MicroBatches {
  std::vector<std::vector<std::int32_t>> ids, targets;
};

// Gradients in the rank's dtype: `count` elements from `data`.
struct GradientSpan {
  void* data = nullptr;
  std::int64_t count = 0;
};

// Validation micro-batches first, first + stride, ... run on this rank.
struct EvaluationShare {
  std::int64_t first = 0;
  std::int64_t stride = 1;
};

class DataParallelStrategy {
 public:
  DataParallelStrategy(const ShardingPlan& plan, const RunConfig& config) : plan_(plan), config_(config) {}
  virtual ~DataParallelStrategy() = default;
  DataParallelStrategy(const DataParallelStrategy&) = delete;
  DataParallelStrategy& operator=(const DataParallelStrategy&) = delete;

  // "naive DataParallel", "DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3".
  virtual std::string_view name() const = 0;

  // The rank's optimizer (null where another rank updates for it), and what
  // the strategy needs to combine gradients. Called once the model is built.
  virtual void build(TrainerRank& rank, const AdamWOptions& options) = 0;

  // The step's global batch as this rank sees it; sets rank.global_scored (the
  // loss denominator). `read` reads the batch every rank derives from (seed, step).
  virtual BatchData read_global_batch(TrainerRank& rank, const std::function<BatchData()>& read, const CommTag& tag);
  // Micro-batch j of accumulation step a on data-parallel rank d holds samples
  // [d B/dp + (a m + j) mb, + mb): the same global batch whatever the layout.
  virtual MicroBatches micro_batches(TrainerRank& rank, const BatchData& global, int accumulation_step,
                                     const CommTag& tag);

  // Backward of micro-batch j is about to run; `synchronize`: the last
  // accumulation step, where the data-parallel ranks combine gradients.
  virtual void before_backward(TrainerRank&, int /*micro_batch*/, bool /*synchronize*/, const CommTag&) {}
  // From the backward thread: every gradient at flat offset >= frontier is final.
  virtual void gradients_ready(TrainerRank&, std::int64_t /*frontier*/) {}
  // The stage's schedule ran (or threw: then errors of the hook are ignored).
  virtual void after_backward(TrainerRank&, bool /*synchronize*/) {}
  // Once the gradients of every accumulation step are in: combine them with
  // the data-parallel peers, where backward did not already.
  virtual void combine_gradients(TrainerRank&, const CommTag&) {}
  // The gradients this rank updates from, combined: the stage's whole flat
  // gradients, or the rank's packed ZeRO-2/3 chunks.
  virtual GradientSpan gradients(TrainerRank& rank);
  // The global gradient norm (rank.grad_norm), clipping and AdamW on what this rank owns.
  virtual void update(TrainerRank& rank, const CommTag& tag) = 0;
  // After the update: the updated shards to every rank that needs them.
  virtual void after_update(TrainerRank&, const CommTag&) {}

  // Which validation micro-batches (of `count`) this rank evaluates.
  virtual EvaluationShare evaluation_share(const TrainerRank& rank, std::int64_t count) const;
  // The fp32 values this rank's AdamW updates, in its packed order: the master
  // weights (mixed precision), else the parameters themselves.
  virtual std::vector<float> packed_master(const TrainerRank& rank) const;
  // This rank's parameters from its stage's flat fp32 values (a resumed run):
  // all of them, or only the rank's own (ZeRO-3's packed chunks).
  virtual std::vector<float> stage_parameters(const TrainerRank& rank, std::vector<float> stage_values) const;

 protected:
  // The whole stage's gradients when the rank holds them all (not ZeRO-2/3):
  // the model's fp32 buffer, or the 16-bit copy of mixed precision.
  static void* whole_gradients(TrainerRank& rank);
  // Norm, clipping and AdamW for the strategies that keep whole gradients
  // (naive's master, DDP, ZeRO-1): the norm over the flat range [begin, end) of
  // the stage, summed over the data-parallel ranks when `sharded` (ZeRO-1's
  // shards), then over the pipeline's stages.
  void flat_update(TrainerRank& rank, std::int64_t begin, std::int64_t end, bool sharded, const CommTag& tag);
  // The rest of flat_update once the rank's sum of squares is known: summed
  // over the pipeline's stages, the norm, clipping and AdamW on the whole
  // gradients (the optimizer's ranges, by flat offset).
  void clip_and_step(TrainerRank& rank, float squares, const CommTag& tag);

  const ShardingPlan& plan_;
  const RunConfig& config_;
};

// The strategy of the plan's rules (the ZeRO paper's stages by what they shard).
std::unique_ptr<DataParallelStrategy> make_strategy(const ShardingPlan& plan, const RunConfig& config);

// Each strategy's maker, in its own file.
std::unique_ptr<DataParallelStrategy> make_naive_data_parallel(const ShardingPlan& plan, const RunConfig& config);
std::unique_ptr<DataParallelStrategy> make_ddp_strategy(const ShardingPlan& plan, const RunConfig& config);
std::unique_ptr<DataParallelStrategy> make_zero1_strategy(const ShardingPlan& plan, const RunConfig& config);
std::unique_ptr<DataParallelStrategy> make_zero2_strategy(const ShardingPlan& plan, const RunConfig& config);
std::unique_ptr<DataParallelStrategy> make_zero3_strategy(const ShardingPlan& plan, const RunConfig& config);

// flat[fb + i] -> packed[pb + i] over an optimizer's ranges (n packed elements).
std::vector<float> pack_ranges(const std::vector<AdamW::ShardRange>& ranges, const std::vector<float>& flat,
                               std::int64_t n);

}  // namespace shardscope
