// SPDX-License-Identifier: GPL-3.0-or-later
// The estimator's view of the schedules that split a backward into B (input
// gradient) and W (weight gradient), the zero-bubble schedules of Qi et al.
// 2024: what a stage keeps alive under them, and their bubble. Both come from
// the simulated action lists (plan/pipeline_schedule.h), the lists the engine
// runs, so that the estimator counts what the ledger of a real step measures.
// A further schedule of this kind is one entry more in kSplitBackwardSchedules
// (split_backward_schedules.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "config/run_choices.h"
#include "model/model_config.h"  // StageLayers

namespace shardscope {

struct SplitBackwardSchedule {
  PipelineScheduleKind kind;
  // The paper's idle time per stage, as text and as a fraction of the step
  // (clock/pipeline_bubble.h), evaluated with T_F, T_B and T_W.
  const char* bubble_formula;
  double (*bubble_fraction)(int stages, int micro_batches, double forward, double backward_input, double weight);
};

// The schedule's entry, or nullptr for a schedule that runs B and W together.
const SplitBackwardSchedule* split_backward_schedule(PipelineScheduleKind kind);

// Bytes a stage keeps from one B to its W (model/weight_gradient_split.h): the
// linears' output gradients of the layers that B ran, one chunk's (ZB-V's B
// runs half a stage), layers × b × s × 9h values of `value_bytes`; under
// activation checkpointing their inputs too, 16h (at tp t a rank's 2h + 7h/t
// and 2h + 5h/t of them: the split linears' slices and the whole outputs and
// inputs of the row-parallel ones).
std::int64_t kept_from_b_to_w_bytes(const StageLayers& stage, int micro_batch_size, int tokens, std::int64_t hidden,
                                    int value_bytes, bool checkpointing = false);

// The peak of a stage's activation memory under a split-backward schedule,
// walking its action list as the engine runs it: a forward fills the lowest free
// activation slot (slots, once filled, stay allocated: slot_bytes each), a B
// keeps kept_bytes until its W, and the W frees the slot. At the peak the stage
// has `slots` slots allocated and `kept` micro-batches between B and W. ZB-V's
// slots and B's are per (chunk, micro-batch): a slot holds one chunk's layers.
struct StageActivationPeak {
  std::int64_t bytes = 0;
  int slots = 0, kept = 0;
  bool bound = false;  // past the size the estimator simulates: slots × (slot + kept), an upper bound
};
StageActivationPeak split_backward_activation_peak(PipelineScheduleKind kind, int stages, int stage, int micro_batches,
                                                   std::int64_t slot_bytes, std::int64_t kept_bytes);
// The same without building the list, for p·m·chunks past the size simulated:
// ZB-V's exactly (2p slots and 2r + 1 kept on stage r), ZB-H1's (min(m, p) slots,
// min(m, s + 1) kept on stage s) and ZB-H2's (min(m, 2p - 1) slots, max(1, min(m - 2(p - 1 - s), p + s))
// kept) exactly too (test_estimate_ledger checks them against the walk); any other
// schedule bounded by every slot with its kept bytes.
StageActivationPeak split_backward_activation_peak_closed_form(PipelineScheduleKind kind, int stages, int stage,
                                                               int micro_batches, std::int64_t slot_bytes,
                                                               std::int64_t kept_bytes);

// In 16 bits B sets each layer's fp32 unit gradient aside for its own W
// (model/weight_gradient_split.cpp: W adds the weight gradients to it and
// rounds it), one buffer per layer and micro-batch owing W. The most layers
// held at the three points of a B the workspace peaks at: its head's backward
// (the layers of the (chunk, micro-batch) pairs still owing W), its last
// layer's (those and the B's own chunk) and its embedding's; past the
// simulated size a chunk's layers for each activation slot (a bound).
struct BoundGradientLayers {
  int at_head = 0, at_layer = 1, at_embedding = 0;  // an unsplit backward: one layer's at a time
};
BoundGradientLayers split_backward_bound_layers(PipelineScheduleKind kind, int stages, int stage, int micro_batches,
                                                const StageLayers& layers);

// The bubble of the simulated schedule with compute times T_F, T_B, T_W per
// micro-batch and stage (any unit), beside its formula; past the size the
// estimator simulates, the formula alone.
struct SplitBackwardBubble {
  double fraction = 0;
  std::string text;
};
SplitBackwardBubble split_backward_bubble(const SplitBackwardSchedule& schedule, int stages, int micro_batches,
                                          double forward, double backward_input, double weight);

}  // namespace shardscope
