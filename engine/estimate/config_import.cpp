// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/config_import.h"

namespace shardscope {

SettingsPatch patch_from_deepspeed(const DeepSpeedConfig& c, std::vector<std::string>& warnings) {
  return patch_from_values(plan_values_from_deepspeed(c, warnings));
}

SettingsPatch patch_from_accelerate(const AccelerateConfig& c, std::vector<std::string>& warnings) {
  return patch_from_values(plan_values_from_accelerate(c, warnings));
}

ImportedSettings import_settings(const std::string& accelerate_path, const std::string& deepspeed_path) {
  PlanImport files = import_plan_files(accelerate_path, deepspeed_path);
  ImportedSettings out;
  for (const std::vector<SchemaValue>& values : files.files) out.patches.push_back(patch_from_values(values));
  out.warnings = std::move(files.warnings);
  out.nodes = files.nodes;
  return out;
}

}  // namespace shardscope
