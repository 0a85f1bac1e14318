// SPDX-License-Identifier: GPL-3.0-or-later
// The phases of a rank's step after backward that every strategy shares
// (rank_step.cpp lists them): the fp16 overflow verdict, the optimizer's span
// and the memory sample after it.
#include <string>

#include "core/process_memory.h"
#include "train/trainer_rank.h"

namespace shardscope {

// fp16: has any rank's gradient overflowed? Checked on the gradients each rank
// updates from, after they are combined; the world agrees on one verdict
// (summed with the losses, which only last stages hold) before anyone steps.
// Returns whether the step is skipped; sets the loss total.
bool Trainer::overflow_verdict(Rank& rk, const CommTag& tag) {
  // totals: the loss sum, ranks that found inf/NaN, ranks that saw it appear in their own backward.
  float totals[3] = {rk.loss_sum, 0.0f, 0.0f};
  std::string seen_in_backward, seen_after;
  if (rk.scaler->enabled()) {
    const GradientSpan grads = rk.strategy->gradients(rk);
    auto* bits = static_cast<std::uint16_t*>(grads.data);
    const std::int64_t n = grads.count;
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
