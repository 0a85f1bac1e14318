// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/split_backward_schedules.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "clock/pipeline_bubble.h"
#include "model/weight_gradient_split.h"
#include "plan/pipeline_schedule.h"

namespace shardscope {

namespace {
// Past this many actions (stages × micro-batches) the lists are not built (as activation_model.cpp).
constexpr std::int64_t kSimulatedActions = 4096;

// One row per schedule that runs W apart from B: its bubble formula (Qi et al. 2024).
constexpr SplitBackwardSchedule kSplitBackwardSchedules[] = {
    {PipelineScheduleKind::zb_h1, "(p−1)(T_F+T_B−T_W)", zb_h1_bubble_fraction},
    {PipelineScheduleKind::zb_h2, "(p−1)·T_F at the step's ends, ≈ 0 inside it when m ≥ 2p−1", zb_h2_bubble_fraction},
};

bool simulated(int stages, int micro_batches) {
  return static_cast<std::int64_t>(stages) * micro_batches <= kSimulatedActions;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
  return text;
}

std::string ratio(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}
}  // namespace

const SplitBackwardSchedule* split_backward_schedule(PipelineScheduleKind kind) {
  for (const SplitBackwardSchedule& entry : kSplitBackwardSchedules)
    if (entry.kind == kind) return &entry;
  return nullptr;
}

std::int64_t kept_from_b_to_w_bytes(const StageLayers& stage, int micro_batch_size, int tokens, std::int64_t hidden,
                                    int value_bytes) {
  const std::int64_t layers = static_cast<std::int64_t>(stage.layer_count()) * stage.chunks;
  return weight_split_kept_floats(layers, static_cast<std::int64_t>(micro_batch_size) * tokens, hidden, false,
                                  stage.tp_size) *
         value_bytes;  // a tp rank's slice of them
}

StageActivationPeak split_backward_activation_peak(PipelineScheduleKind kind, int stages, int stage, int micro_batches,
                                                   std::int64_t slot_bytes, std::int64_t kept_bytes) {
  StageActivationPeak peak;
  if (!simulated(stages, micro_batches)) {
    peak.slots = peak.kept = peak_in_flight_closed_form(kind, stages, stage, micro_batches);
    peak.bytes = peak.slots * (slot_bytes + kept_bytes);
    peak.bound = true;
    return peak;
  }
  const std::vector<PipelineAction> list =
      make_pipeline_schedule(kind, stages, micro_batches)[static_cast<std::size_t>(stage)];
  const std::vector<bool> frees = frees_activations(list);
  std::set<ActivationKey> with_weight_gradient;  // B keeps its gradients only where a W follows
  for (const PipelineAction& a : list)
    if (a.type == PipelineAction::Type::weight_gradient) with_weight_gradient.insert(activation_key(a));
  int held = 0, allocated = 0, kept = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const PipelineAction& a = list[i];
    if (a.type == PipelineAction::Type::forward) allocated = std::max(allocated, ++held);
    if (a.type == PipelineAction::Type::backward && with_weight_gradient.contains(activation_key(a))) ++kept;
    const std::int64_t bytes = allocated * slot_bytes + kept * kept_bytes;
    if (bytes > peak.bytes || peak.slots == 0) peak = {bytes, allocated, kept, false};
    if (a.type == PipelineAction::Type::weight_gradient) --kept;  // W drops the kept gradients, then the slot
    if (frees[i]) --held;
  }
  return peak;
}

SplitBackwardBubble split_backward_bubble(const SplitBackwardSchedule& schedule, int stages, int micro_batches,
                                          double forward, double backward_input, double weight) {
  const double formula = schedule.bubble_fraction(stages, micro_batches, forward, backward_input, weight);
  const std::string times = "T_F:T_B:T_W = 1 : " + ratio(backward_input / forward) + " : " + ratio(weight / forward);
  const std::string beside = "its formula " + std::string(schedule.bubble_formula) +
                             " idle per stage = " + percent(formula) +
                             "; 1F1B's (p−1)(T_F+T_B+T_W) = " + percent(gpipe_bubble_fraction(stages, micro_batches));
  if (!simulated(stages, micro_batches))
    return {formula, "formula, " + times + " (p·m past the simulated size); 1F1B's (p−1)(T_F+T_B+T_W) = " +
                         percent(gpipe_bubble_fraction(stages, micro_batches))};
  const PipelineTimeline t = simulate_pipeline_schedule(
      compute_only(make_pipeline_schedule(schedule.kind, stages, micro_batches)), forward, backward_input, 0, weight);
  return {t.bubble_fraction, "the simulated " + std::string(pipeline_schedule_name(schedule.kind)) + " schedule, " +
                                 times + " (FLOPs); " + beside};
}

}  // namespace shardscope
