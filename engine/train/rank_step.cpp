// SPDX-License-Identifier: GPL-3.0-or-later
// One rank's optimizer step, as a list of named phases (the llm.c habit: the
// step reads top to bottom). Each strategy's own flow lives in its file:
// naive DataParallel in parallel/data_parallel.cpp, DDP's buckets in
// parallel/ddp.cpp, ZeRO in parallel/zero.cpp and parallel/zero_storage.cpp,
// the pipeline schedule in parallel/pipeline_parallel.cpp; the gradient
// phases after backward are in train/optimizer_step.cpp.
#include <cmath>
#include <cstddef>
#include <string>

#include "parallel/data_parallel.h"
#include "parallel/pipeline_parallel.h"
#include "train/trainer_rank.h"

namespace shardscope {

using trainer_detail::Clock;
using trainer_detail::seconds_since;

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

void Trainer::rank_step(Rank& rk) {
  const CommTag tag{steps_done_ + 1, -1, -1};
  const BatchData batch = read_global_batch(rk, tag);
  begin_step(rk, tag);
  for (int a = 0; a < config_.accum; ++a) {
    // Gradient accumulation: gradients add up over the micro-steps, and data-parallel
    // ranks synchronize only on the last one (PyTorch's no_sync before it).
    const bool synchronize = a == config_.accum - 1;
    forward_backward(rk, micro_batch_inputs(rk, batch, a, tag), a, synchronize, tag);
  }
  const auto started = Clock::now();
  Event span = optimizer_span(rk, tag);
  synchronize_gradients(rk, tag);                // naive: gather to rank 0; the tied embedding's two copies
  rk.skipped = overflow_verdict(rk, tag);        // fp16: one verdict for the world, with the loss total
  rk.lr = schedule_.at(steps_done_);
  if (rk.skipped)
    rk.grad_norm = std::nan("");                 // no rank updates: every state stays as it was
  else
    optimizer_update(rk, tag);                   // norm, clipping, AdamW, then ZeRO's all-gathers
  rk.backend->synchronize();                     // a GPU's update ends when its kernels finish
  rk.optimizer_s = seconds_since(started);
  span.end_ns = rk.clock->now();
  emit(span);
  emit_memory_sample(rk, span);
}

// The global batch: every rank derives the same samples from (seed, step), as
// every process of a real job reads its own data loader. Naive DataParallel:
// only the master reads data, broadcasts the parameters and the loss
// denominator, and scatters the micro-batches (micro_batch_inputs).
BatchData Trainer::read_global_batch(Rank& rk, const CommTag& tag) {
  const bool naive = plan_->naive();
  BatchData global;
  if (!naive || rk.dp_rank == 0)
    global = dataset_->batch(rk.model->config().kind, Split::train, config_.seed, steps_done_, 0, config_.batch,
                             config_.seq);
  float scored = static_cast<float>(count_scored(global.targets));
  if (naive && config_.layout.dp() > 1) {
    replicate_parameters(*rk.dp_comm, rk.unit_storage != nullptr ? rk.unit_storage->parameters() : rk.model->params(),
                         rk.model->parameter_count(), rk.dtype, tag);
    rk.dp_comm->broadcast_host(&scored, 1, 0, tag);
  }
  rk.global_scored = static_cast<std::int64_t>(scored);
  return global;
}

// Zero gradients; the loss scale this step uses.
void Trainer::begin_step(Rank& rk, const CommTag& tag) {
  rk.forward_s = rk.backward_s = rk.optimizer_s = 0.0;
  rk.loss_sum = 0.0f;
  rk.model->zero_grads();
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

// The m micro-batches of accumulation step a on this rank. Micro-batch j on
// data-parallel rank d holds samples [d B/dp + (a m + j) mb, + mb): the same
// global batch whatever the layout.
Trainer::MicroBatches Trainer::micro_batch_inputs(Rank& rk, const BatchData& global, int a, CommTag tag) {
  const int dp = config_.layout.dp(), T = config_.seq, mb = config_.micro_batch_size(), m = config_.micro_batches;
  const std::int64_t per_rank = config_.batch / dp;
  MicroBatches out;
  out.ids.resize(static_cast<std::size_t>(m));
  out.targets.resize(static_cast<std::size_t>(m));
  for (int j = 0; j < m; ++j) {
    const std::int64_t within = static_cast<std::int64_t>(a * m + j) * mb;
    auto& ids = out.ids[static_cast<std::size_t>(j)];
    auto& targets = out.targets[static_cast<std::size_t>(j)];
    if (!plan_->naive() || dp == 1) {
      ids = rows_of(global.input_ids, T, rk.dp_rank * per_rank + within, mb);
      targets = rows_of(global.targets, T, rk.dp_rank * per_rank + within, mb);
      continue;
    }
    std::vector<std::int32_t> all_ids, all_targets;  // the master's rows for every replica
    if (rk.dp_rank == 0) {
      for (int d = 0; d < dp; ++d) {
        const auto di = rows_of(global.input_ids, T, d * per_rank + within, mb);
        const auto dt = rows_of(global.targets, T, d * per_rank + within, mb);
        all_ids.insert(all_ids.end(), di.begin(), di.end());
        all_targets.insert(all_targets.end(), dt.begin(), dt.end());
      }
    }
    tag.micro_batch = a * m + j;
    scatter_tokens(*rk.dp_comm, all_ids, ids, static_cast<std::int64_t>(mb) * T, tag);
    scatter_tokens(*rk.dp_comm, all_targets, targets, static_cast<std::int64_t>(mb) * T, tag);
  }
  return out;
}

// Forward and backward of every micro-batch of accumulation step a, in the
// order of the stage's pipeline schedule (one forward and backward without
// pipelining). With `synchronize`, DDP all-reduces its buckets during the
// last backward, as each bucket's gradients become ready.
void Trainer::forward_backward(Rank& rk, const MicroBatches& inputs, int a, bool synchronize, const CommTag& tag) {
  const int m = config_.micro_batches, mb = config_.micro_batch_size(), T = config_.seq;
  Model& model = *rk.model;
  DdpReducer* reducer = synchronize ? rk.reducer.get() : nullptr;
  const InProcessWorld* world = world_.get();
  PipelineStageRun run{model, rk.pp_comm, rk.stage, &rk.actions, {}, {}, 0.0, 0, tag, sink_,
                       rk.clock.get(), event_base(rk, tag.step)};
  run.batch = [&](int j) {
    const auto k = static_cast<std::size_t>(j);
    return Batch{mb, T, inputs.ids[k].data(), inputs.targets[k].data(), nullptr, nullptr};
  };
  run.before_backward = [&, reducer, world](int j) {
    faults_.before_backward(rk.rank, tag.step);
    const bool arm = reducer != nullptr && j == m - 1;
    if (arm)
      reducer->begin(rk.unit_storage != nullptr ? rk.unit_storage->gradients() : static_cast<void*>(model.grads()),
                     rk.dtype, tag);
    model.set_gradient_ready_callback([reducer, world, arm](std::int64_t frontier) {
      if (world->aborted()) throw CommAborted(world->abort_message());
      if (arm) reducer->gradients_ready(frontier);
    });
  };
  run.loss_rows = static_cast<double>(rk.global_scored) / config_.layout.dp();  // DDP averages over dp afterwards
  run.micro_batch_offset = a * m;
  try {
    const PipelineStageResult r = run_pipeline_stage(run);
    // DDP's buckets overlapped the last backward and the sends after it; the
    // optimizer needs them all.
    if (reducer != nullptr) reducer->finish();
    rk.loss_sum += r.loss_sum;
    rk.forward_s += r.forward_s;
    rk.backward_s += r.backward_s;
  } catch (...) {
    abort_world(rk.rank, current_error_text());  // the other ranks (and processes) learn the cause
    if (reducer != nullptr) try {
        reducer->finish();
      } catch (...) {
      }
    throw;
  }
}

Event Trainer::event_base(const Rank& rk, std::int64_t step) const {
  Event base;
  base.rank = rk.rank;
  base.stage = rk.stage;
  base.step = step;
  return base;
}

}  // namespace shardscope
