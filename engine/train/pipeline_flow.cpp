// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline's flow in the trainer (pipeline_flow.h).
#include "train/pipeline_flow.h"

#include <algorithm>
#include <string>

#include "parallel/pipeline_parallel.h"
#include "plan/pipeline_schedule.h"
#include "train/trainer_rank.h"

namespace shardscope {

void set_up_pipeline_stage(TrainerRank& rank, const PipelineSchedule& schedule) {
  rank.model->set_activation_slots(std::max(1, peak_in_flight(schedule)[static_cast<std::size_t>(rank.stage)]));
  rank.actions = schedule[static_cast<std::size_t>(rank.stage)];
}

void sum_tied_embedding_gradients(TrainerRank& rank, const GradientSpan& grads, const CommTag& tag) {
  if (rank.embedding_comm == nullptr) return;
  const ParameterEntry* tokens = rank.model->layout().try_find("embed.tokens");
  const auto esize = static_cast<std::int64_t>(dtype_size(rank.dtype));
  rank.embedding_comm->all_reduce(static_cast<std::byte*>(grads.data) + tokens->offset * esize, tokens->numel,
                                  rank.dtype, ReduceOp::sum, tag);
}

void sum_over_context_parallel(TrainerRank& rank, const GradientSpan& grads, const CommTag& tag) {
  if (rank.cp_comm != nullptr)
    rank.cp_comm->all_reduce(grads.data, grads.count, rank.dtype, ReduceOp::sum,
                             with_purpose(tag, CommPurpose::context_parallel));
}

std::int64_t tied_embedding_copy(const Model& model) {
  const ParameterEntry* tokens = model.layout().try_find("embed.tokens");
  return !model.stage().embedding && tokens != nullptr ? tokens->numel : 0;
}

void sum_over_stages(TrainerRank& rank, float& squares, const CommTag& tag) {
  if (rank.pp_comm != nullptr) rank.pp_comm->all_reduce_host(&squares, 1, ReduceOp::sum, tag);
}

namespace {
// What the exception in flight says.
std::string current_error_text() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}
}  // namespace

// Forward and backward of every micro-batch of accumulation step a, in the
// order of the stage's schedule (one forward and backward without
// pipelining); the data-parallel strategy hooks in around each backward.
void Trainer::forward_backward(Rank& rk, const MicroBatches& inputs, int a, bool synchronize, const CommTag& tag) {
  const int m = config_.micro_batches, mb = config_.micro_batch_size(), T = config_.seq;
  Model& model = *rk.model;
  DataParallelStrategy& strategy = *rk.strategy;
  const InProcessWorld* world = world_.get();
  PipelineStageRun run{
      model, rk.pp_comm, rk.stage, &rk.actions, {}, {}, 0.0, 0, tag, sink_, rk.clock.get(), event_base(rk, tag.step)};
  run.batch = [&](int j) {
    const auto k = static_cast<std::size_t>(j);
    return Batch{mb, T, inputs.ids[k].data(), inputs.targets[k].data(), nullptr, nullptr};
  };
  run.before_backward = [&, world, synchronize](int j) {
    faults_.before_backward(rk.rank, tag.step);
    strategy.before_backward(rk, j, synchronize, tag);
    model.set_gradient_ready_callback([&rk, &strategy, world](std::int64_t frontier) {
      if (world->aborted()) throw CommAborted(world->abort_message());
      strategy.gradients_ready(rk, frontier);
    });
  };
  run.loss_rows = static_cast<double>(rk.global_scored) / config_.layout.dp();  // averaged over dp afterwards
  run.fuse_transfers = config_.schedule != PipelineScheduleKind::zb_v;          // both ways at once: one by one
  run.micro_batch_offset = a * m;
  try {
    const PipelineStageResult r = run_pipeline_stage(run);
    strategy.after_backward(rk, synchronize);
    if (rk.tp_rank == 0) rk.loss_sum += r.loss_sum;  // every tp rank computes the same loss: counted once
    rk.forward_s += r.forward_s;
    rk.backward_s += r.backward_s + r.weight_s;  // the whole backward, split or not
  } catch (...) {
    abort_world(rk.rank, current_error_text());  // the other ranks (and processes) learn the cause
    try {
      strategy.after_backward(rk, synchronize);
    } catch (...) {
    }
    throw;
  }
}

}  // namespace shardscope
