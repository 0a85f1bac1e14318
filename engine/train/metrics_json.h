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

}  // namespace shardscope
