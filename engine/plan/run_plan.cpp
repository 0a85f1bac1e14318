// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/run_plan.h"

#include <stdexcept>

namespace shardscope {

// `config` validated: its schedule (the file's, checked against it, else the
// built-in one) and its sharding plan.
RunPlanPtr plan_valid_run(RunConfig config, std::optional<ScheduleFile> file) {
  PipelineSchedule schedule;
  if (file)
    validate_schedule_file(*file, config);
  else
    schedule = make_pipeline_schedule(config.schedule, config.layout.pp(), config.micro_batches, config.virtual_stages);
  ShardingPlan sharding = make_sharding_plan(config);
  return std::shared_ptr<const RunPlan>(
      new RunPlan(std::move(config), std::move(schedule), std::move(file), std::move(sharding)));
}

RunPlanPtr make_run_plan(RunConfig config) {
  validate_run_config(config);
  std::optional<ScheduleFile> file;
  if (!config.schedule_file.empty()) file = load_schedule_file(config.schedule_file);  // the run's one read
  return plan_valid_run(std::move(config), std::move(file));
}

RunPlanPtr make_run_plan(RunConfig config, ScheduleFile file) {
  if (config.schedule_file.empty()) throw std::invalid_argument("make_run_plan: a schedule file for a run without one");
  validate_run_config(config);
  return plan_valid_run(std::move(config), std::move(file));
}

}  // namespace shardscope
