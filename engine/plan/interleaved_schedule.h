// SPDX-License-Identifier: GPL-3.0-or-later
// Interleaved 1F1B (Narayanan et al. 2021, "Efficient Large-Scale Language
// Model Training on GPU Clusters Using Megatron-LM", sec. 2.2.2; Megatron-LM's
// forward_backward_pipelining_with_interleaving) as action lists.
//
// Each of the p stages holds v model chunks of L / (p·v) layers each, placed
// round-robin: stage s holds virtual stages s, p + s, 2p + s, ..., so chunk c
// of stage s is virtual stage c·p + s, and after chunk c of the last stage the
// model goes on in chunk c + 1 of stage 0. Every F and B then covers 1/v of a
// stage's layers, and the fill and drain shrink v-fold: the bubble is
// (p - 1) / (v·m + p - 1) of the step, for v times the point-to-point messages.
#pragma once

#include <optional>
#include <vector>

#include "plan/pipeline_schedule.h"

namespace shardscope {

// Throws ConfigError naming --virtual-stages unless v >= 2 (v 1 is 1f1b), --pp
// unless p >= 2, and --micro-batches and --pp unless m is a multiple of p
// (Megatron's rule: the micro-batches go round the stages in groups of p).
void check_interleaved_shape(int stages, int micro_batches, int virtual_stages);

// The stage that runs the place before / after chunk `chunk` of `stage` in the
// model (virtual stage chunk·p + stage ∓ 1), or nullopt at the model's ends
// (the first chunk of stage 0 reads the batch, the last chunk of the last stage
// computes the loss). With one chunk: stage - 1 and stage + 1.
std::optional<int> previous_stage_of(int stage, int chunk, int stages);
std::optional<int> next_stage_of(int stage, int chunk, int stages, int chunks);

// Stage s runs the v·m (chunk, micro-batch) forwards in Megatron's order: k-th
// forward on chunk (k mod p·v) / p, micro-batch (k / p·v)·p + k mod p, i.e. p
// micro-batches through chunk 0, the same p through chunk 1, ...; the k-th
// backward on the same micro-batch in reverse chunk order. Then
//   warm-up:   w = min(2(p - s - 1) + (v - 1)p, v·m) forwards (all v·m of
//              them when m = p, as Megatron does);
//   steady:    v·m - w rounds of F(w + k) B(k);
//   cool-down: the w backwards left.
// The transfers go as Megatron batches them: after each warm-up forward and
// each cool-down backward, and after each steady round's F and B together,
// one group of the sends of what just ran and the receives of what runs
// next. A group's transfers stand side by side in the list, and
// pipeline_schedule_rendezvous_problem posts them together (NCCL's group,
// Megatron's batch_isend_irecv): posted one at a time they would hang.
PipelineSchedule interleaved_schedule(int stages, int micro_batches, int virtual_stages);

// The warm-up above plus the forward of the first steady round: the most
// (chunk, micro-batch) activations stage s holds at once.
int interleaved_peak_in_flight(int stages, int stage, int micro_batches, int virtual_stages);

}  // namespace shardscope
