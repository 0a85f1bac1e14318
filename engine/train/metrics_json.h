// SPDX-License-Identifier: GPL-3.0-or-later
// The metrics schema of --metrics-out: one JSON object per step. Keys are
// added by later features, never renamed (documented in README.md).
#pragma once

#include <nlohmann/json.hpp>

#include "plan/run_plan.h"
#include "train/trainer.h"

namespace shardscope {

nlohmann::json memory_to_json(const MemoryBytes& bytes);
nlohmann::json step_metrics_to_json(const StepMetrics& metrics);
// The run config as stored in recordings and compared between the CLI and the GUI.
nlohmann::json run_config_to_json(const RunConfig& config);
// The inverse of run_config_to_json (a recording's metadata back to a config):
// run_config_to_json(run_config_from_json(j)) == j. Throws ConfigError naming
// the key that is missing or has the wrong type or value. "warmup" is taken as
// the resolved warm-up steps; "micro_batch" is derived and only checked.
RunConfig run_config_from_json(const nlohmann::json& j);

// A recording's metadata (and an event stream's): run_config_to_json, and for
// a --schedule-file run the schedule it ran, "schedule_file_rows" (its CSV, a
// row per rank: schedule_csv_rows), so the run can be opened without the file.
nlohmann::json run_metadata_to_json(const RunPlan& run);
// The run of such metadata, planned: the schedule from "schedule_file_rows"
// where it is there, else (a recording made before it was, or by an older
// program) the --schedule-file read from the disk. ConfigError naming the key.
RunPlanPtr run_plan_from_metadata(const nlohmann::json& j);

}  // namespace shardscope
