// SPDX-License-Identifier: GPL-3.0-or-later
// One rank's optimizer step: its share of the global batch through its stage's
// pipeline schedule (one forward and backward without pipelining), then the
// gradients combined across ranks and the update (see trainer.h).
#include <cmath>
#include <cstddef>
#include <limits>
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
}  // namespace

void Trainer::rank_step(Rank& rk) {
  const RunConfig& c = config_;
  const bool naive = c.dp_mode == DataParallelMode::naive;
  const int dp = c.dp, T = c.seq, mb = c.micro_batch(), m = c.micro_batches;
  const std::int64_t step = steps_done_ + 1;
  Model& model = *rk.model;
  CommTag tag{step, -1, -1};
  Event base;
  base.rank = rk.rank;
  base.stage = rk.stage;
  base.step = step;
  rk.forward_s = rk.backward_s = rk.optimizer_s = 0.0;

  // The global batch: every rank derives the same samples from (seed, step), as
  // every process of a real job reads its own data loader. Naive DataParallel:
  // only the master reads data; it scatters the micro-batches.
  BatchData global;
  if (!naive || rk.dp_rank == 0)
    global = dataset_->batch(model.config().kind, Split::train, c.seed, steps_done_, 0, c.batch, T);
  float scored = static_cast<float>(count_scored(global.targets));
  if (naive && dp > 1) {
    replicate_parameters(*rk.dp_comm, rk.zero != nullptr ? rk.zero->parameters() : model.params(),
                         model.parameter_count(), rk.dtype, tag);
    rk.dp_comm->broadcast_host(&scored, 1, 0, tag);  // the master tells the replicas the loss denominator
  }
  rk.global_scored = static_cast<std::int64_t>(scored);

  model.zero_grads();
  if (rk.zero != nullptr) {
    rk.zero->zero_gradients();
    rk.zero->set_context(sink_, &clock_, base);
  }
  rk.loss_scale = rk.scaler->scale();
  if (!(std::isnormal(rk.loss_scale) && rk.loss_scale > 0.0f))
    throw std::runtime_error("the fp16 loss scale fell to " + std::to_string(rk.loss_scale) + " after " +
                             std::to_string(rk.scaler->overflows()) +
                             " overflows: the gradients are inf/NaN at every scale (training diverged; lower --lr, "
                             "or set --min-loss-scale with --loss-scaler deepspeed)");
  model.set_loss_scale(rk.loss_scale);
  rk.loss_sum = 0.0f;
  for (int a = 0; a < c.accum; ++a) {
    // Micro-batch j of accumulation step a on data-parallel rank d holds samples
    // [d B/dp + (a m + j) mb, + mb): the same global batch whatever the layout.
    std::vector<std::vector<std::int32_t>> ids(static_cast<std::size_t>(m)), targets(ids.size());
    for (int j = 0; j < m; ++j) {
      const std::int64_t within = static_cast<std::int64_t>(a * m + j) * mb;
      auto& i = ids[static_cast<std::size_t>(j)];
      auto& t = targets[static_cast<std::size_t>(j)];
      if (naive && dp > 1) {
        std::vector<std::int32_t> all_ids, all_targets;
        if (rk.dp_rank == 0) {
          for (int d = 0; d < dp; ++d) {
            const std::int64_t first = static_cast<std::int64_t>(d) * (c.batch / dp) + within;
            auto di = rows_of(global.input_ids, T, first, mb), dt = rows_of(global.targets, T, first, mb);
            all_ids.insert(all_ids.end(), di.begin(), di.end());
            all_targets.insert(all_targets.end(), dt.begin(), dt.end());
          }
        }
        tag.micro_batch = a * m + j;
        scatter_tokens(*rk.dp_comm, all_ids, i, static_cast<std::int64_t>(mb) * T, tag);
        scatter_tokens(*rk.dp_comm, all_targets, t, static_cast<std::int64_t>(mb) * T, tag);
      } else {
        const std::int64_t first = static_cast<std::int64_t>(rk.dp_rank) * (c.batch / dp) + within;
        i = rows_of(global.input_ids, T, first, mb);
        t = rows_of(global.targets, T, first, mb);
      }
    }
    const bool last_accum = a == c.accum - 1;
    DdpReducer* reducer = rk.reducer.get();
    const InProcessWorld* world = world_.get();
    PipelineStageRun run{model, nullptr, 0, nullptr, {}, {}, {}, 0.0, 0, {}, nullptr, nullptr, {}};
    run.pipeline = rk.pp_comm;
    run.stage = rk.stage;
    run.actions = &rk.actions;
    run.batch = [&](int j) {
      return Batch{mb, T, ids[static_cast<std::size_t>(j)].data(), targets[static_cast<std::size_t>(j)].data(),
                   nullptr, nullptr};
    };
    // DDP communicates only during the step's last backward (PyTorch's no_sync for the others).
    run.before_backward = [&, reducer, world, last_accum](int j) {
      if (rk.rank == c.fail_rank && step == c.fail_step)
        throw std::runtime_error("injected failure (--inject-failure) before backward of step " +
                                 std::to_string(step));
      const bool arm = reducer != nullptr && last_accum && j == m - 1;
      if (arm)
        reducer->begin(rk.zero != nullptr ? rk.zero->gradients() : static_cast<void*>(model.grads()), rk.dtype,
                       CommTag{step, -1, -1});
      model.set_gradient_ready_callback([reducer, world, arm](std::int64_t frontier) {
        if (world->aborted()) throw CommAborted(world->abort_message());
        if (arm) reducer->gradients_ready(frontier);
      });
    };
    run.after_backward = [&, reducer, last_accum](int j) {
      if (reducer != nullptr && last_accum && j == m - 1) reducer->finish();
    };
    run.loss_rows = static_cast<double>(rk.global_scored) / dp;  // DDP averages over dp afterwards
    run.micro_batch_offset = a * m;
    run.tag = tag;
    run.sink = sink_;
    run.clock = &clock_;
    run.event_base = base;
    try {
      const PipelineStageResult r = run_pipeline_stage(run);
      rk.loss_sum += r.loss_sum;
      rk.forward_s += r.forward_s;
      rk.backward_s += r.backward_s;
    } catch (...) {
      world_->abort(rk.rank, "rank " + std::to_string(rk.rank) + " failed");
      if (reducer != nullptr) try {
          reducer->finish();
        } catch (...) {
        }
      throw;
    }
  }
  combine_and_update(rk, tag);
}

void Trainer::combine_and_update(Rank& rk, const CommTag& step_tag) {
  const RunConfig& c = config_;
  Model& model = *rk.model;
  CommTag tag = step_tag;
  tag.micro_batch = -1;
  const auto t0 = Clock::now();
  Event span;
  span.kind = EventKind::compute_span;
  span.rank = rk.rank;
  span.stage = rk.stage;
  span.step = tag.step;
  span.compute = ComputeKind::optimizer;
  span.start_ns = clock_.now_ns();
  const std::int64_t P = model.parameter_count();
  const bool mixed = rk.dtype != DType::f32;
  const auto esize = static_cast<std::int64_t>(dtype_size(rk.dtype));
  // The whole stage's gradients, when this rank holds them all (not ZeRO-2/3).
  void* grads = mixed ? rk.zero->gradients() : static_cast<void*>(model.grads());
  if (c.dp > 1 && c.dp_mode == DataParallelMode::naive)
    reduce_gradients_to_master(*rk.dp_comm, *rk.backend, grads, P, rk.dtype, rk.comm_buffer, tag);
  // The tied embedding's copies on the first and last stage get the sum of both gradients.
  const ParameterEntry* tokens = model.layout().try_find("embed.tokens");
  if (rk.embedding_comm != nullptr)
    rk.embedding_comm->all_reduce(static_cast<std::byte*>(grads) + tokens->offset * esize, tokens->numel, rk.dtype,
                                  ReduceOp::sum, tag);
  // fp16: has any rank's gradient overflowed? Checked on the gradients each rank
  // updates from, after they are combined; the world agrees on one verdict
  // (summed with the losses) before anyone steps.
  // totals: the loss sum, ranks that found inf/NaN, ranks that saw it appear in their own backward.
  float totals[3] = {rk.loss_sum, 0.0f, 0.0f};
  std::string seen_in_backward, seen_after;
  if (rk.scaler->enabled()) {
    const bool sharded = rk.zero->shards_gradients();
    auto* bits = static_cast<std::uint16_t*>(sharded ? rk.zero->gradients() : grads);
    const std::int64_t n = sharded ? rk.zero->gradient_count() : P;
    if (rk.rank == c.overflow_rank && tag.step == c.overflow_step && n > 0) {
      const std::uint16_t inf = rk.dtype == DType::f16 ? 0x7C00 : 0x7F80;  // as if this rank's shard had overflowed
      rk.backend->upload(bits, &inf, sizeof inf);
      seen_in_backward = rk.zero->tensor_at(rk.zero->flat_offset_of_gradient(0)) + " (injected)";
    }
    if (seen_in_backward.empty()) seen_in_backward = rk.zero->first_overflow();
    const bool updates = rk.optimizer != nullptr;  // naive replicas hold no combined gradients
    const std::int64_t bad = updates ? rk.backend->first_non_finite_16(rk.dtype, bits, n) : -1;
    if (bad >= 0) seen_after = rk.zero->tensor_at(rk.zero->flat_offset_of_gradient(bad));
    totals[1] = !seen_in_backward.empty() || bad >= 0 ? 1.0f : 0.0f;
    totals[2] = seen_in_backward.empty() ? 0.0f : 1.0f;
  }
  rk.world_comm->all_reduce_host(totals, 3, ReduceOp::sum, tag);  // only last stages hold losses
  rk.loss_sum = totals[0];
  const float scale = rk.loss_scale;
  const LossScaleUpdate verdict = rk.scaler->update(totals[1] > 0.0f);
  rk.skipped = verdict.skipped;
  // The overflow is reported by the ranks where it appeared; if none saw it in
  // backward (a sum overflowed in the reduction), by data-parallel rank 0.
  std::string report = seen_in_backward;
  if (report.empty() && totals[2] == 0.0f && rk.dp_rank == 0 && !seen_after.empty())
    report = seen_after + " (after the reduction)";
  if (!report.empty()) {
    Event overflow = span;
    overflow.kind = EventKind::overflow;
    overflow.level = LogLevel::warning;
    overflow.start_ns = overflow.end_ns = clock_.now_ns();
    overflow.loss_scale = scale;
    overflow.skipped = verdict.skipped;
    overflow.set_text(report);
    emit(overflow);
  }
  rk.lr = schedule_.at(steps_done_);
  const std::int64_t skip = !model.stage().embedding && tokens != nullptr ? tokens->numel : 0;
  if (verdict.skipped) {
    // No rank updates: parameters, master weights and AdamW states stay as they were.
    rk.grad_norm = std::numeric_limits<double>::quiet_NaN();
  } else if (rk.zero != nullptr && rk.zero->shards_gradients()) {
    // ZeRO-2/3: each rank holds its gradient chunks; the norm sums them over the ranks.
    float squares = static_cast<float>(
        mixed ? rk.backend->sum_of_squares_16(rk.dtype, static_cast<const std::uint16_t*>(rk.zero->gradients()),
                                              rk.zero->gradient_count())
              : rk.backend->sum_of_squares(static_cast<const float*>(rk.zero->gradients()), rk.zero->gradient_count()));
    rk.dp_comm->all_reduce_host(&squares, 1, ReduceOp::sum, tag);
    rk.grad_norm = std::sqrt(static_cast<double>(squares)) / scale;
    const float factor = clip_factor(rk.grad_norm, c.grad_clip) / scale;
    const bool sharded_params = rk.zero->shards_parameters();
    if (mixed) {
      rk.optimizer->step_mixed(static_cast<std::uint16_t*>(rk.zero->parameters()),
                               static_cast<const std::uint16_t*>(rk.zero->gradients()), rk.dtype, rk.lr, factor,
                               sharded_params, /*grads_packed=*/true);
    } else {
      rk.optimizer->step(sharded_params ? static_cast<float*>(rk.zero->parameters()) : model.params(),
                         static_cast<const float*>(rk.zero->gradients()), rk.lr, factor, sharded_params,
                         /*grads_packed=*/true);
    }
    if (!sharded_params) rk.zero->all_gather_parameters(tag);
  } else if (rk.optimizer != nullptr) {
    // Global norm over all stages, counting the tied embedding once (its first-stage copy).
    float squares = static_cast<float>(
        mixed ? rk.backend->sum_of_squares_16(rk.dtype, static_cast<const std::uint16_t*>(grads) + skip, P - skip)
              : rk.backend->sum_of_squares(model.grads() + skip, P - skip));
    if (rk.pp_comm != nullptr) rk.pp_comm->all_reduce_host(&squares, 1, ReduceOp::sum, tag);
    rk.grad_norm = std::sqrt(static_cast<double>(squares)) / scale;
    const float factor = clip_factor(rk.grad_norm, c.grad_clip) / scale;
    if (mixed) {
      rk.optimizer->step_mixed(static_cast<std::uint16_t*>(rk.zero->parameters()),
                               static_cast<const std::uint16_t*>(grads), rk.dtype, rk.lr, factor);
    } else {
      rk.optimizer->step(model.params(), model.grads(), rk.lr, factor);
    }
    if (c.zero_stage >= 1 && c.dp > 1)
      all_gather_parameter_shards(*rk.dp_comm, *rk.backend, mixed ? rk.zero->parameters() : static_cast<void*>(model.params()),
                                  rk.dtype, rk.partition, rk.comm_buffer, tag);
  }
  rk.backend->synchronize();  // a GPU's update ends when its kernels finish
  rk.optimizer_s = seconds_since(t0);
  span.end_ns = clock_.now_ns();
  emit(span);

  Event memory = span;
  memory.kind = EventKind::memory_sample;
  memory.start_ns = memory.end_ns = clock_.now_ns();
  memory.memory = rk.ledger.current().bytes;
  if (DeviceUsage usage; rk.device_memory != nullptr && rk.device_memory->device_usage(usage)) {
    memory.device = usage.device;
    memory.device_used_bytes = usage.used_bytes;
    memory.device_total_bytes = usage.total_bytes;
    memory.device_reserved_bytes = usage.reserved_bytes;
  }
  emit(memory);
}

}  // namespace shardscope
