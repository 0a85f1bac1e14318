// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/split_backward_schedules.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "clock/pipeline_bubble.h"
#include "clock/zb_v_bubble.h"
#include "model/weight_gradient_split.h"
#include "plan/pipeline_schedule.h"

namespace shardscope {

namespace {
// Past this many actions (stages × micro-batches × chunks) the lists are not built (as activation_model.cpp).
constexpr std::int64_t kSimulatedActions = 4096;

// One row per schedule that runs W apart from B: its bubble formula (Qi et al. 2024).
constexpr SplitBackwardSchedule kSplitBackwardSchedules[] = {
    {PipelineScheduleKind::zb_h1, "(p−1)(T_F+T_B−T_W)", zb_h1_bubble_fraction},
    {PipelineScheduleKind::zb_h2, "(p−1)·T_F at the step's ends, ≈ 0 inside it when m ≥ 2p−1", zb_h2_bubble_fraction},
    // Two half-stage chunks in a V (plan/zb_v_schedule.h): T_F, T_B, T_W are one chunk's.
    {PipelineScheduleKind::zb_v, "(p−1)·T_F / (2m(T_F+T_B+T_W) + (p−1)·T_F) at the step's ends (chunk times)",
     zb_v_bubble_fraction},
};

// Chunks per stage: ZB-V's two, one otherwise.
int chunks_of(PipelineScheduleKind kind) {
  return chunk_placement(kind) == ChunkPlacement::v_shape ? 2 : 1;
}

bool simulated(PipelineScheduleKind kind, int stages, int micro_batches) {
  return static_cast<std::int64_t>(stages) * micro_batches * chunks_of(kind) <= kSimulatedActions;
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
                                    int value_bytes, bool checkpointing) {
  const std::int64_t layers = stage.layer_count();  // one chunk's: a B runs one chunk (Model::backward_input)
  return weight_split_kept_floats(layers, static_cast<std::int64_t>(micro_batch_size) * tokens, hidden, checkpointing,
                                  stage.tp_size) *
         value_bytes;  // a tp rank's slice of them
}

StageActivationPeak split_backward_activation_peak_closed_form(PipelineScheduleKind kind, int stages, int stage,
                                                               int micro_batches, std::int64_t slot_bytes,
                                                               std::int64_t kept_bytes) {
  StageActivationPeak peak;
  peak.slots = peak.kept = peak_in_flight_closed_form(kind, stages, stage, micro_batches);
  if (kind == PipelineScheduleKind::zb_v && micro_batches >= 2 * stages - 1) {
    // ZB-V's V order (zb_v_schedule.cpp): stage r fills all 2p slots and, at the
    // same point of its list, holds 2r + 1 (chunk, micro-batch) pairs between B
    // and W, the most it ever holds (its r cool-down pairs B(chunk 0) B(chunk 1)
    // run before their W's): the walk's peak, exactly, for every m >= 2p - 1.
    peak.kept = 2 * stage + 1;
    peak.bytes = peak.slots * slot_bytes + peak.kept * kept_bytes;
    return peak;
  }
  // ZB-H1 and ZB-H2 (zero_bubble_schedules.cpp): the most micro-batches a stage holds between B and W
  // comes at a point where all its slots are filled, so the walk's peak is slots · slot + kept · kept
  // whatever their sizes. ZB-H1's stage s delays its W's s rounds: s + 1 B's owe theirs at once (m at
  // most). ZB-H2's stage s holds p + s when m is large; with fewer micro-batches, m - 2(p - 1 - s), 1 at
  // least (read off the walk, not the paper). Both equal the walk for every p <= 8, stage and
  // m <= 4096 / p (test_estimate_ledger checks p <= 8, m <= 4p + 12).
  if (kind == PipelineScheduleKind::zb_h1 || kind == PipelineScheduleKind::zb_h2) {
    peak.kept = kind == PipelineScheduleKind::zb_h1
                    ? std::min(micro_batches, stage + 1)
                    : std::max(1, std::min(micro_batches - 2 * (stages - 1 - stage), stages + stage));
    peak.bytes = peak.slots * slot_bytes + peak.kept * kept_bytes;
    return peak;
  }
  peak.bytes = peak.slots * (slot_bytes + kept_bytes);
  peak.bound = true;
  return peak;
}

StageActivationPeak split_backward_activation_peak(PipelineScheduleKind kind, int stages, int stage, int micro_batches,
                                                   std::int64_t slot_bytes, std::int64_t kept_bytes) {
  if (!simulated(kind, stages, micro_batches))
    return split_backward_activation_peak_closed_form(kind, stages, stage, micro_batches, slot_bytes, kept_bytes);
  StageActivationPeak peak;
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

BoundGradientLayers split_backward_bound_layers(PipelineScheduleKind kind, int stages, int stage, int micro_batches,
                                                const StageLayers& layers) {
  const int k = layers.layer_count();  // per chunk
  if (!simulated(kind, stages, micro_batches)) {
    const int pairs = peak_in_flight_closed_form(kind, stages, stage, micro_batches);  // at most one per slot
    return {k * pairs, k * pairs, k * pairs};
  }
  BoundGradientLayers bound{0, 0, 0};
  int owed = 0;  // (chunk, micro-batch) pairs past B whose W has not run, each holding its chunk's k layers
  const PipelineSchedule schedule = make_pipeline_schedule(kind, stages, micro_batches);
  for (const PipelineAction& a : schedule[static_cast<std::size_t>(stage)]) {
    if (a.type == PipelineAction::Type::weight_gradient) --owed;
    if (a.type != PipelineAction::Type::backward) continue;
    const int before = k * owed, with_own = k * (owed + 1);
    const StageLayers chunk = layers.chunk(a.chunk);
    if (chunk.head) bound.at_head = std::max(bound.at_head, before);
    if (k > 0) bound.at_layer = std::max(bound.at_layer, with_own);
    if (chunk.embedding) bound.at_embedding = std::max(bound.at_embedding, with_own);
    ++owed;
  }
  return bound;
}

SplitBackwardBubble split_backward_bubble(const SplitBackwardSchedule& schedule, int stages, int micro_batches,
                                          double forward, double backward_input, double weight) {
  const double formula = schedule.bubble_fraction(stages, micro_batches, forward, backward_input, weight);
  const std::string times = "T_F:T_B:T_W = 1 : " + ratio(backward_input / forward) + " : " + ratio(weight / forward);
  const std::string beside = "its formula " + std::string(schedule.bubble_formula) +
                             " idle per stage = " + percent(formula) +
                             "; 1F1B's (p−1)(T_F+T_B+T_W) = " + percent(gpipe_bubble_fraction(stages, micro_batches));
  if (!simulated(schedule.kind, stages, micro_batches))
    return {formula, "formula, " + times + " (p·m past the simulated size); 1F1B's (p−1)(T_F+T_B+T_W) = " +
                         percent(gpipe_bubble_fraction(stages, micro_batches))};
  const PipelineTimeline t =
      simulate_pipeline_schedule(compute_only(make_pipeline_schedule(schedule.kind, stages, micro_batches)), forward,
                                 backward_input, 0, weight, chunk_placement(schedule.kind));
  return {t.bubble_fraction, "the simulated " + std::string(pipeline_schedule_name(schedule.kind)) + " schedule, " +
                                 times + " (FLOPs); " + beside};
}

}  // namespace shardscope
