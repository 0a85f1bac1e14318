// SPDX-License-Identifier: GPL-3.0-or-later
// The phases of a rank's step after backward (rank_step.cpp lists them):
// synchronize the gradients, agree on the fp16 overflow verdict, update.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/process_memory.h"
#include "parallel/data_parallel.h"
#include "train/trainer_rank.h"

namespace shardscope {

// The whole stage's gradients, when this rank holds them all (not ZeRO-2/3):
// the model's fp32 buffer, or the 16-bit copy of mixed precision.
void* Trainer::whole_gradients(Rank& rk) {
  return rk.dtype != DType::f32 ? rk.unit_storage->gradients() : static_cast<void*>(rk.model->grads());
}

// Naive DataParallel: every replica's gradients summed on rank 0 (DDP has
// all-reduced its buckets during backward; ZeRO-2/3 reduce-scattered each
// unit). With pipeline stages, the tied embedding's copies on the first and
// last stage each get the sum of both gradients (Megatron's embedding group),
// before ZeRO-1 reduce-scatters the gradients by its shards (the two stages'
// shards cover different ranges of the embedding).
void Trainer::synchronize_gradients(Rank& rk, const CommTag& tag) {
  Model& model = *rk.model;
  const std::int64_t esize = static_cast<std::int64_t>(dtype_size(rk.dtype));
  void* grads = whole_gradients(rk);
  if (plan_->naive() && plan_->dp() > 1)
    reduce_gradients_to_master(*rk.dp_comm, *rk.backend, grads, model.parameter_count(), rk.dtype, rk.comm_buffer,
                               tag);
  if (rk.embedding_comm != nullptr) {
    const ParameterEntry* tokens = model.layout().try_find("embed.tokens");
    rk.embedding_comm->all_reduce(static_cast<std::byte*>(grads) + tokens->offset * esize, tokens->numel, rk.dtype,
                                  ReduceOp::sum, tag);
  }
  if (plan_->reduce_scatters_flat_shards())
    reduce_scatter_gradient_shards(*rk.dp_comm, *rk.backend, grads, rk.dtype, plan_->rank(rk.rank).flat_shard,
                                   rk.comm_buffer, tag);
}

// fp16: has any rank's gradient overflowed? Checked on the gradients each rank
// updates from, after they are combined; the world agrees on one verdict
// (summed with the losses, which only last stages hold) before anyone steps.
// Returns whether the step is skipped; sets the loss total.
bool Trainer::overflow_verdict(Rank& rk, const CommTag& tag) {
  // totals: the loss sum, ranks that found inf/NaN, ranks that saw it appear in their own backward.
  float totals[3] = {rk.loss_sum, 0.0f, 0.0f};
  std::string seen_in_backward, seen_after;
  if (rk.scaler->enabled()) {
    const bool sharded = rk.unit_storage->shards_gradients();
    auto* bits = static_cast<std::uint16_t*>(sharded ? rk.unit_storage->gradients() : whole_gradients(rk));
    const std::int64_t n = sharded ? rk.unit_storage->gradient_count() : rk.model->parameter_count();
    if (faults_.overflow(*rk.backend, rk.rank, tag.step, rk.dtype, bits, n))
      seen_in_backward = rk.unit_storage->tensor_at(rk.unit_storage->flat_offset_of_gradient(0)) + " (injected)";
    if (seen_in_backward.empty()) seen_in_backward = rk.unit_storage->first_overflow();
    const bool updates = rk.optimizer != nullptr;  // naive replicas hold no combined gradients
    const std::int64_t bad = updates ? rk.backend->first_non_finite_16(rk.dtype, bits, n) : -1;
    if (bad >= 0) seen_after = rk.unit_storage->tensor_at(rk.unit_storage->flat_offset_of_gradient(bad));
    totals[1] = !seen_in_backward.empty() || bad >= 0 ? 1.0f : 0.0f;
    totals[2] = seen_in_backward.empty() ? 0.0f : 1.0f;
  }
  rk.world_comm->all_reduce_host(totals, 3, ReduceOp::sum, tag);
  rk.loss_sum = totals[0];
  const LossScaleUpdate verdict = rk.scaler->update(totals[1] > 0.0f);
  // Reported by the ranks where it appeared; if none saw it in backward (a sum
  // overflowed in the reduction), by data-parallel rank 0.
  std::string report = seen_in_backward;
  if (report.empty() && totals[2] == 0.0f && rk.dp_rank == 0 && !seen_after.empty())
    report = seen_after + " (after the reduction)";
  if (!report.empty()) {
    Event overflow = event_base(rk, tag.step);
    overflow.kind = EventKind::overflow;
    overflow.level = LogLevel::warning;
    overflow.start_ns = overflow.end_ns = rk.clock->now();
    overflow.loss_scale = rk.loss_scale;
    overflow.skipped = verdict.skipped;
    overflow.set_text(report);
    emit(overflow);
  }
  return verdict.skipped;
}

// The global gradient norm (before clipping), the clipped and unscaled AdamW
// update of what this rank owns, then ZeRO's all-gather of the updated shards.
void Trainer::optimizer_update(Rank& rk, const CommTag& tag) {
  Model& model = *rk.model;
  const bool mixed = plan_->mixed();
  if (plan_->unit_chunks()) {
    // ZeRO-2/3: each rank holds its gradient chunks; the norm sums them over the ranks.
    const void* grads = rk.unit_storage->gradients();
    const std::int64_t n = rk.unit_storage->gradient_count();
    float squares = static_cast<float>(
        mixed ? rk.backend->sum_of_squares_16(rk.dtype, static_cast<const std::uint16_t*>(grads), n)
              : rk.backend->sum_of_squares(static_cast<const float*>(grads), n));
    rk.dp_comm->all_reduce_host(&squares, 1, ReduceOp::sum, tag);
    rk.grad_norm = std::sqrt(static_cast<double>(squares)) / rk.loss_scale;
    const float factor = clip_factor(rk.grad_norm, config_.grad_clip) / rk.loss_scale;
    const bool sharded = plan_->shards_parameters();
    if (mixed)
      rk.optimizer->step_mixed(static_cast<std::uint16_t*>(rk.unit_storage->parameters()),
                               static_cast<const std::uint16_t*>(grads), rk.dtype, rk.lr, factor, sharded,
                               /*grads_packed=*/true);
    else
      rk.optimizer->step(sharded ? static_cast<float*>(rk.unit_storage->parameters()) : model.params(),
                         static_cast<const float*>(grads), rk.lr, factor, sharded, /*grads_packed=*/true);
    if (plan_->all_gathers_unit_chunks()) rk.unit_storage->all_gather_parameters(tag);
    return;
  }
  flat_optimizer_update(rk, tag);
}

// DDP, naive DataParallel's master, ZeRO-1: the norm over the gradients this
// rank updates from (all of its stage's, or its ZeRO-1 shard summed over the
// data-parallel ranks), then over the stages, counting the tied embedding once
// (its first-stage copy; it lies at the start of a last stage's layout).
void Trainer::flat_optimizer_update(Rank& rk, const CommTag& tag) {
  if (rk.optimizer == nullptr) return;  // a naive replica: the master updates
  Model& model = *rk.model;
  const bool mixed = plan_->mixed(), sharded = plan_->reduce_scatters_flat_shards();
  const ParameterEntry* tokens = model.layout().try_find("embed.tokens");
  const ZeroPartition& shard = plan_->rank(rk.rank).flat_shard;
  const std::int64_t skip = !model.stage().embedding && tokens != nullptr ? tokens->numel : 0;
  const std::int64_t begin = std::max(skip, sharded ? shard.begin : 0);
  const std::int64_t end = std::max(begin, sharded ? shard.end : model.parameter_count());
  void* grads = whole_gradients(rk);
  float squares = static_cast<float>(
      mixed ? rk.backend->sum_of_squares_16(rk.dtype, static_cast<const std::uint16_t*>(grads) + begin, end - begin)
            : rk.backend->sum_of_squares(model.grads() + begin, end - begin));
  if (sharded) rk.dp_comm->all_reduce_host(&squares, 1, ReduceOp::sum, tag);
  if (rk.pp_comm != nullptr) rk.pp_comm->all_reduce_host(&squares, 1, ReduceOp::sum, tag);
  rk.grad_norm = std::sqrt(static_cast<double>(squares)) / rk.loss_scale;
  const float factor = clip_factor(rk.grad_norm, config_.grad_clip) / rk.loss_scale;
  if (mixed)
    rk.optimizer->step_mixed(static_cast<std::uint16_t*>(rk.unit_storage->parameters()),
                             static_cast<const std::uint16_t*>(grads), rk.dtype, rk.lr, factor);
  else
    rk.optimizer->step(model.params(), model.grads(), rk.lr, factor);
  if (plan_->all_gathers_flat_shards())
    all_gather_parameter_shards(*rk.dp_comm, *rk.backend, mixed ? rk.unit_storage->parameters() : model.params(),
                                rk.dtype, shard, rk.comm_buffer, tag);
}

Event Trainer::optimizer_span(const Rank& rk, const CommTag& tag) const {
  Event span = event_base(rk, tag.step);
  span.kind = EventKind::compute_span;
  span.compute = ComputeKind::optimizer;
  span.start_ns = rk.clock->now();
  return span;
}

void Trainer::emit_memory_sample(const Rank& rk, const Event& span) {
  Event memory = span;
  memory.kind = EventKind::memory_sample;
  memory.start_ns = memory.end_ns = rk.clock->now();
  memory.memory = rk.ledger.current().bytes;
  memory.memory_peak = rk.ledger.peak().bytes;
  if (rk.device_memory == nullptr) {
    if (const auto process = process_memory()) {
      memory.process_resident_bytes = process->resident_bytes;
      memory.process_peak_resident_bytes = process->peak_resident_bytes;
    }
  }
  if (DeviceUsage usage; rk.device_memory != nullptr && rk.device_memory->device_usage(usage)) {
    memory.device = usage.device;
    memory.device_used_bytes = usage.used_bytes;
    memory.device_total_bytes = usage.total_bytes;
    memory.device_reserved_bytes = usage.reserved_bytes;
  }
  emit(memory);
}

}  // namespace shardscope
