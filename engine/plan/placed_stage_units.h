// SPDX-License-Identifier: GPL-3.0-or-later
// Each pipeline stage's units (embeddings, layers, head) from the engine's own
// parameter layout, wherever the stage's layers are placed: contiguous,
// interleaved 1F1B's round-robin chunks, or ZB-V's V (plan/zb_v_schedule.h).
// One rule for the run's sharding plan (sharding_plan.cpp) and the
// estimator's (estimate/stage_placement.h), so the two cannot drift.
#pragma once

#include <functional>
#include <vector>

#include "model/model_config.h"
#include "plan/sharding_plan.h"

namespace shardscope {

// Stage s holds layers_of(s); with tp > 1 tp rank 0's slices (every tp rank
// holds as many), with ep > 1 ep rank 0's E/ep experts of each MoE layer.
std::vector<StageUnits> placed_stage_units(const ModelConfig& model, int pp, int tp, int ep,
                                           const std::function<StageLayers(int)>& layers_of);

}  // namespace shardscope
