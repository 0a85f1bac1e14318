// SPDX-License-Identifier: GPL-3.0-or-later
// A run, decided once: its config, validated, its pipeline schedule (a
// --schedule-file read here, once) and its sharding plan, built.
// The CLI and the GUI make one RunPlan per run (make_run_plan) and pass it
// down; the trainer, the views, the recorder and the estimator read it and
// check or build nothing again. run_config_validations() and
// sharding_plans_built() count what was made, so a test can tell.
#pragma once

#include <memory>
#include <optional>

#include "config/run_config.h"
#include "plan/pipeline_schedule.h"
#include "plan/schedule_file.h"
#include "plan/sharding_plan.h"

namespace shardscope {

class RunPlan {
 public:
  const RunConfig& config() const { return config_; }
  // [stage] its actions: the --schedule-file's as read when the plan was made, else --schedule's.
  const PipelineSchedule& pipeline_schedule() const {
    return schedule_file_ ? schedule_file_->schedule : pipeline_schedule_;
  }
  // The --schedule-file as read when the plan was made; nothing for a built-in
  // schedule. A restart and a recording take it from here, never from the disk.
  const std::optional<ScheduleFile>& schedule_file() const { return schedule_file_; }
  const ShardingPlan& sharding() const { return sharding_; }

 private:
  friend std::shared_ptr<const RunPlan> plan_valid_run(RunConfig config, std::optional<ScheduleFile> file);
  RunPlan(RunConfig config, PipelineSchedule schedule, std::optional<ScheduleFile> file, ShardingPlan sharding)
      : config_(std::move(config)),
        pipeline_schedule_(std::move(schedule)),
        schedule_file_(std::move(file)),
        sharding_(std::move(sharding)) {}

  RunConfig config_;
  PipelineSchedule pipeline_schedule_;  // a built-in schedule's (empty with a file)
  std::optional<ScheduleFile> schedule_file_;
  ShardingPlan sharding_;
};

using RunPlanPtr = std::shared_ptr<const RunPlan>;

// Validates `config` (FieldError / ConfigError naming the flag), reads its
// --schedule-file if it has one (checked as validate_schedule_file does) and
// builds its sharding plan: a RunPlan is always of a valid run.
RunPlanPtr make_run_plan(RunConfig config);
// The same with config.schedule_file already read as `file` (the CLI reads it
// to take --pp and --micro-batches from it; a restart and a recording carry
// it): checked against the config as a file read from the disk is, and not
// read again. std::invalid_argument if the config names no schedule file.
RunPlanPtr make_run_plan(RunConfig config, ScheduleFile file);

}  // namespace shardscope
