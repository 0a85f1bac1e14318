// SPDX-License-Identifier: GPL-3.0-or-later
// Which layers, parameters and units each pipeline stage of an estimated
// layout holds, as its schedule places them: the engine's contiguous split and
// interleaved 1F1B's round-robin chunks (ModelShape::stage_layers), or ZB-V's
// V (plan/zb_v_schedule.h): stage r holds chunks r and 2p - 1 - r of L/2p
// layers each, stage 0 both the embeddings and the head, so GPT's tied
// embedding is held once, as the engine's ledger has it. The memory and time
// models ask here, so the placements are told apart in one place.
#pragma once

#include <cstdint>
#include <vector>

#include "estimate/estimate_settings.h"
#include "estimate/model_shape.h"

namespace shardscope {

// Stage `stage`'s layers on one of s.layout.tp() ranks. ZB-V throws ConfigError
// naming --pp when the layers do not split into 2p chunks, as a run refuses them.
StageLayers placed_stage_layers(const ModelShape& model, const EstimateSettings& s, int stage);
// Ψ_s, that stage's parameters (one tp rank's, E/ep experts).
std::int64_t placed_stage_parameters(const ModelShape& model, const EstimateSettings& s, int stage);
// Every stage's units for the sharding plan, and the plan of s.plan_layout().
std::vector<StageUnits> placed_stage_units(const ModelShape& model, const EstimateSettings& s);
ShardingPlan placed_sharding_plan(const ModelShape& model, const EstimateSettings& s);

}  // namespace shardscope
