// SPDX-License-Identifier: GPL-3.0-or-later
// A run, decided once: its config, validated, its pipeline schedule (a
// --schedule-file read here, once) and its sharding plan, built.
// The CLI and the GUI make one RunPlan per run (make_run_plan) and pass it
// down; the trainer, the views, the recorder and the estimator read it and
// check or build nothing again. run_config_validations() and
// sharding_plans_built() count what was made, so a test can tell.
#pragma once

#include <memory>

#include "config/run_config.h"
#include "plan/pipeline_schedule.h"
#include "plan/sharding_plan.h"

namespace shardscope {

class RunPlan {
 public:
  const RunConfig& config() const { return config_; }
  // [stage] its actions: the --schedule-file's as read when the plan was made, else --schedule's.
  const PipelineSchedule& pipeline_schedule() const { return pipeline_schedule_; }
  const ShardingPlan& sharding() const { return sharding_; }

 private:
  friend std::shared_ptr<const RunPlan> make_run_plan(RunConfig config);
  RunPlan(RunConfig config, PipelineSchedule schedule, ShardingPlan sharding)
      : config_(std::move(config)), pipeline_schedule_(std::move(schedule)), sharding_(std::move(sharding)) {}

  RunConfig config_;
  PipelineSchedule pipeline_schedule_;
  ShardingPlan sharding_;
};

using RunPlanPtr = std::shared_ptr<const RunPlan>;

// Validates `config` (FieldError / ConfigError naming the flag) and builds its
// sharding plan: the only way to get a RunPlan, so a plan is always of a valid run.
RunPlanPtr make_run_plan(RunConfig config);

}  // namespace shardscope
