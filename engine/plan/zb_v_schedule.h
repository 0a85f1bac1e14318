// SPDX-License-Identifier: GPL-3.0-or-later
// ZB-V (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", sec. 6;
// sail-sg/zero-bubble-pipeline-parallelism) as action lists.
//
// The layers split into 2p chunks placed in a V: stage r holds chunk 0 =
// virtual stage r and chunk 1 = virtual stage 2p - 1 - r. A micro-batch goes
// down the stages in chunk 0 (stage 0 embeds it), turns on the last stage
// (its chunk 0 feeds its own chunk 1: a local handoff, no transfer) and comes
// back up in chunk 1 to stage 0, which runs the head and the loss; the
// backward goes back the V. Stage 0 so holds both ends of the model (GPT's
// tied embedding and head live on one stage). Every F, B and W covers half a
// stage's layers, the backward is split into B and W, and with T_F = T_B =
// T_W the W's fill every wait: the bubble is near zero at 1F1B's activation
// memory (2p half-stage activations = p whole-stage ones), for twice 1F1B's
// point-to-point messages.
#pragma once

#include <optional>
#include <vector>

#include "model/model_config.h"
#include "plan/pipeline_schedule.h"

namespace shardscope {

// Throws ConfigError naming --pp unless p >= 2 and --micro-batches unless
// m >= 2p - 1 (the V's warm-up: stage 0 runs 2p - 1 forwards of chunk 0
// before the first micro-batch comes back up to it).
void check_zb_v_shape(int stages, int micro_batches);

// The place (stage, chunk) before / after chunk `chunk` of `stage` in the V
// (virtual stage r for chunk 0, 2p - 1 - r for chunk 1), or nullopt at the
// model's ends: chunk 0 of stage 0 embeds, chunk 1 of stage 0 runs the head.
struct VPlace {
  int stage = 0, chunk = 0;
};
std::optional<VPlace> v_place_before(int stage, int chunk, int stages);
std::optional<VPlace> v_place_after(int stage, int chunk, int stages);

// Stage r of p runs, with f0 / f1 the forwards of chunk 0 / 1 so far:
//   warm-up:   2(p - r) - 1 forwards of chunk 0; then r pairs F(chunk 1)
//              F(chunk 0); then p - r rounds F B W of chunk 1;
//   steady:    rounds F(chunk 0) B W(chunk 0) F B W(chunk 1) until every
//              forward of chunk 1 has run (no F of chunk 0 once all m have);
//   cool-down: r pairs B(chunk 0) B(chunk 1); p - r rounds B(chunk 0) and
//              the oldest owed W of chunk 0; then the W's still owed,
//              chunk 1's first and W(chunk 0, m - 1) last.
// Each chunk's F, B and W run in micro-batch order. The lists hold at most
// 2p (chunk, micro-batch) activations per stage. A receive sits just before
// its computation, and a stage posts its sends to a peer in the order the
// peer receives them (point-to-point channels deliver in order), so an
// activation send may wait behind a gradient (see the .cpp).
PipelineSchedule zb_v_schedule(int stages, int micro_batches);
// What stage r holds in the V: layers [r·k, (r+1)·k) as chunk 0 and
// [(2p-1-r)·k, (2p-r)·k) as chunk 1, k = L / 2p (chunk_stride (2p-1-2r)·k);
// stage 0 embeds (chunk 0) and runs the head (chunk 1), one copy of GPT's
// tied embedding. Throws ConfigError naming --pp when L does not split into 2p.
StageLayers zb_v_stage_layers(const ModelConfig& config, int stages, int stage);
// Compute lists on V-placed chunks (chunk 0 / 1 of each stage) with their
// transfers as zb_v_schedule places them; std::logic_error where a gradient
// send would have to wait (hand-written lists: plan/schedule_file.h).
PipelineSchedule with_v_transfers(const std::vector<std::vector<PipelineAction>>& compute);
// The computations alone (F, B and W), per stage.
std::vector<std::vector<PipelineAction>> zb_v_compute_lists(int stages, int micro_batches);

}  // namespace shardscope
