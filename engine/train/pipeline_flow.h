// SPDX-License-Identifier: GPL-3.0-or-later
// The trainer's side of pipeline parallelism (the stage's actions themselves
// run in parallel/pipeline_parallel.h): each stage keeps as many micro-batches'
// activations as its schedule has in flight, runs the schedule once per
// accumulation step (Trainer::forward_backward, pipeline_flow.cpp, calling the
// data-parallel strategy's backward hooks), and the tied token embedding, held
// by the first and the last stage, gets the sum of both copies' gradients
// (Megatron's embedding group) before the data-parallel strategy combines
// them. The gradient norm sums over the stages and counts that copy once.
// With one stage every function here is a no-op but the schedule's run.
#pragma once

#include <cstdint>

#include "config/run_config.h"
#include "model/model.h"
#include "parallel/communicator.h"
#include "plan/pipeline_schedule.h"
#include "train/strategy/strategy.h"

namespace shardscope {

// The stage's actions and activation slots, from the run's schedule (RunPlan::pipeline_schedule).
void set_up_pipeline_stage(TrainerRank& rank, const PipelineSchedule& schedule);
// First and last stage: each copy of the tied embedding := the sum of both
// copies' gradients (grads: the stage's whole flat gradients).
void sum_tied_embedding_gradients(TrainerRank& rank, const GradientSpan& grads, const CommTag& tag);
// Context parallelism: each cp rank's gradients come from its tokens only; the
// sum over the cp group is the whole sequences' (before ZeRO-1's reduce-scatter,
// after DDP's all-reduce: both are linear, so the order does not matter).
void sum_over_context_parallel(TrainerRank& rank, const GradientSpan& grads, const CommTag& tag);
// Elements at the start of the stage's layout that the gradient norm skips: a
// last stage's copy of the tied embedding (the first stage counts it).
std::int64_t tied_embedding_copy(const Model& model);
// A sum of squares over the stages of this data-parallel rank.
void sum_over_stages(TrainerRank& rank, float& squares, const CommTag& tag);

}  // namespace shardscope
