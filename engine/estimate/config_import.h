// SPDX-License-Identifier: GPL-3.0-or-later
// From imported config files to estimator settings. The files are read once,
// by config/run_import.h (plan_values_from_deepspeed / _accelerate: schema
// rows with the file key each came from); this adapter only turns those values
// into SettingsPatch records that resolve_settings applies in order
// (accelerate, the DeepSpeed file it names, --deepspeed, then the command line).
#pragma once

#include <string>
#include <vector>

#include "config/run_import.h"
#include "estimate/estimate_settings.h"
#include "io/accelerate_config.h"
#include "io/deepspeed_config.h"

namespace shardscope {

// One file's values as a patch (patch_from_values); `origin` credits each to its file and key.
SettingsPatch patch_from_deepspeed(const DeepSpeedConfig& config, std::vector<std::string>& warnings);
SettingsPatch patch_from_accelerate(const AccelerateConfig& config, std::vector<std::string>& warnings);

struct ImportedSettings {
  std::vector<SettingsPatch> patches;  // in the order to apply
  std::vector<std::string> warnings;   // every file's unknown keys and notes
  int nodes = 0;                       // accelerate's num_machines; 0 when no file says
};

// Loads the files given (empty path: none). ConfigError / FormatError name the file.
ImportedSettings import_settings(const std::string& accelerate_path, const std::string& deepspeed_path);

}  // namespace shardscope
