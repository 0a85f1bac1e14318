// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/config_import.h"

#include <stdexcept>

#include "config/run_schema.h"
#include "core/error.h"
#include "core/json_text.h"

namespace shardscope {

namespace {
// The keys the run-config schema (config/run_schema.h) maps onto its fields,
// the estimator's own rows (micro_batch, offload_*, gpus_per_node) included.
const RunField& row(std::string_view field) {
  const RunField* found = find_schema_field(field);
  if (found == nullptr) throw std::logic_error("run schema: no field \"" + std::string(field) + "\"");
  return *found;
}
std::string_view deepspeed_key(std::string_view field) {
  return row(field).deepspeed;
}
std::string_view accelerate_key(std::string_view field) {
  return row(field).accelerate;
}
}  // namespace

SettingsPatch patch_from_deepspeed(const DeepSpeedConfig& c, std::vector<std::string>& warnings) {
  SettingsPatch p;
  const std::string& f = c.source;
  warnings.insert(warnings.end(), c.warnings.begin(), c.warnings.end());
  if (c.micro_batch_size)
    p.micro_batch_size = *c.micro_batch_size,
    p.origin.push_back({"micro_batch", f + ": " + std::string(deepspeed_key("micro_batch"))});
  if (c.accum) p.accum = *c.accum, p.origin.push_back({"accum", f + ": " + std::string(deepspeed_key("accum"))});
  if (c.train_batch) p.global_batch = *c.train_batch, p.origin.push_back({"global_batch", f + ": " + std::string(deepspeed_key("batch"))});
  if (c.bf16.value_or(false)) {
    p.precision = Precision::bf16, p.origin.push_back({"precision", f + ": bf16.enabled"});
  } else if (c.fp16.value_or(false)) {
    p.precision = Precision::fp16, p.origin.push_back({"precision", f + ": fp16.enabled"});
  } else if (c.fp16 || c.bf16) {
    p.precision = Precision::fp32, p.origin.push_back({"precision", f + ": fp16/bf16 disabled"});
  }
  if (c.zero_stage) p.zero_stage = *c.zero_stage, p.origin.push_back({"zero", f + ": " + std::string(deepspeed_key("zero"))});
  if (c.offload_optimizer != OffloadDevice::none)
    p.offload_optimizer = true,
    p.origin.push_back({"offload_optimizer", f + ": " + std::string(deepspeed_key("offload_optimizer"))});
  if (c.offload_param != OffloadDevice::none)
    p.offload_params = true,
    p.origin.push_back({"offload_params", f + ": " + std::string(deepspeed_key("offload_params"))});
  if (c.activation_checkpointing)
    p.recompute = Recompute::full,
    p.origin.push_back({"recompute", f + ": " + std::string(deepspeed_key("checkpoint"))});
  return p;
}

SettingsPatch patch_from_accelerate(const AccelerateConfig& c, std::vector<std::string>& warnings) {
  SettingsPatch p;
  const std::string& f = c.source;
  warnings.insert(warnings.end(), c.warnings.begin(), c.warnings.end());
  if (c.num_processes)
    p.axes[Axis::dp] = *c.num_processes, p.origin.push_back({"dp", f + ": " + std::string(accelerate_key("dp"))});
  if (c.num_machines && c.num_processes) {
    if (*c.num_processes % *c.num_machines != 0)
      throw ConfigError(f + ": num_processes " + std::to_string(*c.num_processes) +
                        " does not split over num_machines " + std::to_string(*c.num_machines));
    p.gpus_per_node = *c.num_processes / *c.num_machines;
    p.origin.push_back({"gpus_per_node", f + ": " + std::string(accelerate_key("gpus_per_node"))});
  }
  if (c.mixed_precision) {
    const std::string& m = *c.mixed_precision;
    if (m == "fp8") {
      warnings.push_back(f +
                         ": mixed_precision fp8 is estimated as bf16 (fp8 affects matmul inputs, not stored states)");
      p.precision = Precision::bf16;
    } else {
      p.precision = parse_precision(m == "false" ? "no" : bounded_excerpt(m), f + ": mixed_precision");
    }
    p.origin.push_back({"precision", f + ": " + std::string(accelerate_key("precision"))});
  }
  if (c.distributed_type == "DEEPSPEED") {
    if (c.zero_stage)
      p.zero_stage = *c.zero_stage, p.origin.push_back({"zero", f + ": " + std::string(accelerate_key("zero"))});
    if (c.accum)
      p.accum = *c.accum, p.origin.push_back({"accum", f + ": " + std::string(accelerate_key("accum"))});
    if (c.offload_optimizer_device && *c.offload_optimizer_device != "none")
      p.offload_optimizer = true,
      p.origin.push_back({"offload_optimizer", f + ": " + std::string(accelerate_key("offload_optimizer"))});
    if (c.offload_param_device && *c.offload_param_device != "none") {
      if (c.zero_stage.value_or(0) == 3) {
        p.offload_params = true,
        p.origin.push_back({"offload_params", f + ": " + std::string(accelerate_key("offload_params"))});
      } else {
        warnings.push_back(f + ": deepspeed_config.offload_param_device works only with zero_stage 3; ignored");
      }
    }
  } else if (c.distributed_type == "FSDP") {
    // PyTorch FSDP shards like ZeRO: FULL_SHARD ~ stage 3, SHARD_GRAD_OP ~ stage 2, NO_SHARD ~ DDP.
    const std::string s = c.fsdp_sharding_strategy.value_or("FULL_SHARD");
    int stage = 3;
    if (s == "SHARD_GRAD_OP" || s == "2")
      stage = 2;
    else if (s == "NO_SHARD" || s == "3")
      stage = 0;
    else if (s == "HYBRID_SHARD" || s == "4" || s == "_HYBRID_SHARD_ZERO2" || s == "5")
      warnings.push_back(f + ": fsdp_sharding_strategy " + s +
                         " shards within a node only; estimated as across all ranks");
    else if (s != "FULL_SHARD" && s != "1")
      throw ConfigError(f + ": fsdp_config.fsdp_sharding_strategy '" + bounded_excerpt(s) +
                        "' is not a known FSDP strategy");
    p.zero_stage = stage, p.origin.push_back({"zero", f + ": fsdp_sharding_strategy " + s + " (as ZeRO-" +
                                                                std::to_string(stage) + ")"});
    if (c.fsdp_offload_params.value_or(false)) {
      p.offload_optimizer = true;
      if (stage == 3) p.offload_params = true;
      p.origin.push_back({"offload", f + ": fsdp_offload_params"});
    }
    if (c.fsdp_activation_checkpointing.value_or(false))
      p.recompute = Recompute::full, p.origin.push_back({"recompute", f + ": fsdp_activation_checkpointing"});
  } else if (c.distributed_type != "MULTI_GPU" && c.distributed_type != "NO" && c.distributed_type != "MULTI_CPU") {
    warnings.push_back(f + ": distributed_type " + bounded_excerpt(c.distributed_type) +
                       " is estimated as plain data parallelism");
  }
  return p;
}

ImportedSettings import_settings(const std::string& accelerate_path, const std::string& deepspeed_path) {
  ImportedSettings out;
  if (!accelerate_path.empty()) {
    const AccelerateConfig acc = load_accelerate_config(accelerate_path);
    out.patches.push_back(patch_from_accelerate(acc, out.warnings));
    if (acc.num_machines) out.nodes = *acc.num_machines;
    if (acc.deepspeed_config_file && acc.distributed_type == "DEEPSPEED")
      out.patches.push_back(patch_from_deepspeed(
          load_deepspeed_config(*acc.deepspeed_config_file, acc.source + ": deepspeed_config.deepspeed_config_file"),
          out.warnings));
  }
  if (!deepspeed_path.empty())
    out.patches.push_back(patch_from_deepspeed(load_deepspeed_config(deepspeed_path), out.warnings));
  return out;
}

}  // namespace shardscope
