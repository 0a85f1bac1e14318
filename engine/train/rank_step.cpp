// SPDX-License-Identifier: GPL-3.0-or-later
// One rank's optimizer step, as a list of named phases (the llm.c habit: the
// step reads top to bottom). The data-parallel strategy of the run
// (train/strategy/strategy.h: naive DataParallel, DDP, ZeRO-1, -2 or -3, each
// in its own file) hooks into the phases; the pipeline's part is in
// train/pipeline_flow.cpp, the phases after backward in train/optimizer_step.cpp.
#include <cmath>
#include <string>

#include "train/pipeline_flow.h"
#include "train/trainer_rank.h"

namespace shardscope {

using trainer_detail::Clock;
using trainer_detail::seconds_since;

void Trainer::rank_step(Rank& rk) {
  const CommTag tag{steps_done_ + 1, -1, -1};
  DataParallelStrategy& strategy = *rk.strategy;
  const auto read = [&] { return read_global_batch(rk); };
  const BatchData batch = strategy.read_global_batch(rk, read, tag);  // naive: the master's, replicated
  begin_step(rk, tag);
  for (int a = 0; a < config_.accum; ++a) {
    // Gradient accumulation: gradients add up over the micro-steps, and data-parallel
    // ranks synchronize only on the last one (PyTorch's no_sync before it).
    const bool synchronize = a == config_.accum - 1;
    forward_backward(rk, strategy.micro_batches(rk, batch, a, tag), a, synchronize, tag);
  }
  const auto started = Clock::now();
  Event span = optimizer_span(rk, tag);
  // The gradients combined: the tied embedding's copies on the first and the
  // last stage (DDP and ZeRO-1 only run with stages), then the data-parallel
  // peers' (naive: to the master; ZeRO-1: reduce-scatter; DDP and ZeRO-2/3
  // did theirs during backward).
  sum_tied_embedding_gradients(rk, strategy.gradients(rk), tag);
  sum_over_context_parallel(rk, strategy.gradients(rk), tag);
  strategy.combine_gradients(rk, tag);
  rk.skipped = overflow_verdict(rk, tag);  // fp16: one verdict for the world, with the loss total
  rk.lr = schedule_.at(steps_done_);
  if (rk.skipped) {
    rk.grad_norm = std::nan("");  // no rank updates: every state stays as it was
  } else {
    strategy.update(rk, tag);        // norm, clipping, AdamW
    strategy.after_update(rk, tag);  // ZeRO-1/2: the updated shards to every rank
  }
  rk.backend->synchronize();  // a GPU's update ends when its kernels finish
  rk.optimizer_s = seconds_since(started);
  span.end_ns = rk.clock->now();
  emit(span);
  emit_memory_sample(rk, span);
}

// The global batch every rank derives from (seed, step), as every process of
// a real job reads its own data loader (the strategy decides who reads it).
BatchData Trainer::read_global_batch(const Rank& rk) const {
  return dataset_->batch(rk.model->config().kind, Split::train, config_.seed, steps_done_, 0, config_.batch,
                         config_.seq);
}

// Zero gradients; the loss scale this step uses.
void Trainer::begin_step(Rank& rk, const CommTag& tag) {
  rk.forward_s = rk.backward_s = rk.optimizer_s = 0.0;
  rk.loss_sum = 0.0f;
  rk.model->zero_grads();
  rk.model->reset_moe_stats();  // the step's routing figures start from zero
  if (rk.unit_storage != nullptr) {
    rk.unit_storage->zero_gradients();
    rk.unit_storage->set_context(sink_, rk.clock.get(), event_base(rk, tag.step));
  }
  rk.loss_scale = rk.scaler->scale();
  if (!(std::isnormal(rk.loss_scale) && rk.loss_scale > 0.0f))
    throw std::runtime_error("the fp16 loss scale fell to " + std::to_string(rk.loss_scale) + " after " +
                             std::to_string(rk.scaler->overflows()) +
                             " overflows: the gradients are inf/NaN at every scale (training diverged; lower --lr, "
                             "or set --min-loss-scale with --loss-scaler deepspeed)");
  rk.model->set_loss_scale(rk.loss_scale);
}

Event Trainer::event_base(const Rank& rk, std::int64_t step) const {
  Event base;
  base.rank = rk.rank;
  base.stage = rk.stage;
  base.step = step;
  return base;
}

}  // namespace shardscope
