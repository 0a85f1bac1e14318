// SPDX-License-Identifier: GPL-3.0-or-later
// The zero-bubble schedules of Qi et al. 2024 ("Zero Bubble Pipeline
// Parallelism", sail-sg/zero-bubble-pipeline-parallelism) as compute-only
// action lists (F, B, W per stage); make_pipeline_schedule
// (plan/pipeline_schedule.h) adds the transfers. Both split every backward
// into B (input gradient) and W (weight gradient) and run each stage's W's in
// micro-batch order, W(m-1) last, so the weight gradients of a step are final
// when a stage's last W ends (DDP's buckets start from there).
#pragma once

#include <vector>

#include "plan/pipeline_schedule.h"

namespace shardscope {

// ZB-H1: 1F1B's warm-up and steady state with B alone, stage s running W(k)
// s rounds after B(k) and the owed W's in the cool-down's waits.
std::vector<std::vector<PipelineAction>> zb_h1_compute_lists(int stages, int micro_batches);
// ZB-H2: up to 2p - 1 micro-batches in flight per stage, placed by a greedy
// clock (unit F, B and W times; B first, then F, then W) that fills the warm-up too.
std::vector<std::vector<PipelineAction>> zb_h2_compute_lists(int stages, int micro_batches);

}  // namespace shardscope
