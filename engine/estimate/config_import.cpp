// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/config_import.h"

#include <stdexcept>

namespace shardscope {

namespace {
// The estimator's names of two schema rows, as its table and the planner's notes print them.
std::string setting_name(const std::string& key) {
  if (key == "checkpoint") return "recompute";
  if (key == "batch") return "global_batch";  // DeepSpeed's train_batch_size
  return key;
}
}  // namespace

SettingsPatch patch_from_values(const std::vector<FileValue>& values) {
  SettingsPatch p;
  for (const FileValue& v : values) {
    const std::string& k = v.key;
    if (k == "dp")
      p.axes[Axis::dp] = v.value.get<int>();
    else if (k == "micro_batch")
      p.micro_batch_size = v.value.get<int>();
    else if (k == "accum")
      p.accum = v.value.get<int>();
    else if (k == "batch")
      p.global_batch = v.value.get<std::int64_t>();
    else if (k == "gpus_per_node")
      p.gpus_per_node = v.value.get<int>();
    else if (k == "zero")
      p.zero_stage = v.value.get<int>();
    else if (k == "precision")
      p.precision = parse_precision(v.value.get<std::string>(), v.from);
    else if (k == "checkpoint")
      p.recompute = parse_recompute(v.value.get<std::string>(), v.from);
    else if (k == "offload_optimizer")
      p.offload_optimizer = v.value.get<bool>();
    else if (k == "offload_params")
      p.offload_params = v.value.get<bool>();
    else
      throw std::logic_error("estimate: a file value of \"" + k + "\", which the estimator does not read");
    p.origin.push_back({setting_name(k), v.from});
  }
  return p;
}

SettingsPatch patch_from_deepspeed(const DeepSpeedConfig& c, std::vector<std::string>& warnings) {
  return patch_from_values(plan_values_from_deepspeed(c, warnings));
}

SettingsPatch patch_from_accelerate(const AccelerateConfig& c, std::vector<std::string>& warnings) {
  return patch_from_values(plan_values_from_accelerate(c, warnings));
}

ImportedSettings import_settings(const std::string& accelerate_path, const std::string& deepspeed_path) {
  PlanImport files = import_plan_files(accelerate_path, deepspeed_path);
  ImportedSettings out;
  for (const std::vector<FileValue>& values : files.files) out.patches.push_back(patch_from_values(values));
  out.warnings = std::move(files.warnings);
  out.nodes = files.nodes;
  return out;
}

}  // namespace shardscope
