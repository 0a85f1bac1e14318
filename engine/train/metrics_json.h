// SPDX-License-Identifier: GPL-3.0-or-later
// The metrics schema of --metrics-out: one JSON object per step. Keys are
// added by later features, never renamed (documented in README.md).
#pragma once

#include <nlohmann/json.hpp>

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

}  // namespace shardscope
