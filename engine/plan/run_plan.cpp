// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/run_plan.h"

#include "plan/schedule_file.h"

namespace shardscope {

RunPlanPtr make_run_plan(RunConfig config) {
  validate_run_config(config);
  PipelineSchedule schedule = plan_pipeline_schedule(config);  // reads and checks a --schedule-file, once
  ShardingPlan sharding = make_sharding_plan(config);
  return std::shared_ptr<const RunPlan>(new RunPlan(std::move(config), std::move(schedule), std::move(sharding)));
}

}  // namespace shardscope
