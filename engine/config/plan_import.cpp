// SPDX-License-Identifier: GPL-3.0-or-later
// The config files read for the estimator's surfaces (config/run_import.h):
// each value a DeepSpeed JSON or accelerate YAML sets, as a schema row's key
// with the file's key it came from. The rows name the file keys
// (RunField::deepspeed, RunField::accelerate), so the run's importer and this
// one credit a value to the same key.
#include <stdexcept>

#include "config/run_import.h"
#include "config/run_schema.h"
#include "core/error.h"
#include "core/json_text.h"

namespace shardscope {

namespace {

const RunField& row(std::string_view key) {
  const RunField* found = find_schema_field(key);
  if (found == nullptr) throw std::logic_error("run schema: no field \"" + std::string(key) + "\"");
  return *found;
}

// Values of one file, each credited to "FILE: KEY".
struct Values {
  const std::string& source;
  std::vector<SchemaValue> list;

  void add(std::string_view key, nlohmann::json value, std::string_view file_key) {
    list.push_back({std::string(key), std::move(value), source + ": " + std::string(file_key)});
  }
  void add_deepspeed(std::string_view key, nlohmann::json value) { add(key, std::move(value), row(key).deepspeed); }
  void add_accelerate(std::string_view key, nlohmann::json value) { add(key, std::move(value), row(key).accelerate); }
};

// accelerate's FSDP plugin: PyTorch FSDP shards like ZeRO: FULL_SHARD ~ stage 3, SHARD_GRAD_OP ~ stage 2,
// NO_SHARD ~ DDP.
void add_fsdp(Values& v, const AccelerateConfig& c, std::vector<std::string>& warnings) {
  const std::string& f = c.source;
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
  v.add("zero", stage, "fsdp_sharding_strategy " + s + " (as ZeRO-" + std::to_string(stage) + ")");
  if (c.fsdp_offload_params.value_or(false)) {  // FSDP's CPU offload moves the optimizer's states and the parameters
    v.add("offload_optimizer", true, "fsdp_offload_params");
    if (stage == 3) v.add("offload_params", true, "fsdp_offload_params");
  }
  if (c.fsdp_activation_checkpointing.value_or(false)) v.add("checkpoint", "full", "fsdp_activation_checkpointing");
}

// accelerate's Megatron-LM plugin: tp and pp from their degrees, dp what num_processes leaves
// (Megatron: world = dp × tp × pp), the distributed optimizer as ZeRO-1 over dp, Megatron's
// recompute_activations (selective recompute) and sequence parallelism.
void add_megatron(Values& v, const AccelerateConfig& c) {
  const std::int64_t tp = c.megatron_tp_degree.value_or(1), pp = c.megatron_pp_degree.value_or(1);
  const std::string m = "megatron_lm_config.";
  if (c.megatron_tp_degree) v.add("tp", tp, m + "megatron_lm_tp_degree");
  if (c.megatron_pp_degree) v.add("pp", pp, m + "megatron_lm_pp_degree");
  if (c.num_processes) {
    if (*c.num_processes % (tp * pp) != 0)
      throw ConfigError(c.source + ": num_processes " + std::to_string(*c.num_processes) +
                        " does not split into megatron_lm_tp_degree " + std::to_string(tp) +
                        " × megatron_lm_pp_degree " + std::to_string(pp) + " (dp = num_processes / (tp × pp))");
    v.add("dp", *c.num_processes / (tp * pp), "num_processes / (megatron_lm_tp_degree × megatron_lm_pp_degree)");
  }
  if (c.megatron_num_micro_batches)
    v.add("micro_batches", *c.megatron_num_micro_batches, m + "megatron_lm_num_micro_batches");
  if (c.megatron_sequence_parallelism.value_or(false))
    v.add("sequence_parallel", true, m + "megatron_lm_sequence_parallelism");
  if (c.megatron_recompute_activations.value_or(false))
    v.add("checkpoint", "selective", m + "megatron_lm_recompute_activations");
  if (c.megatron_use_distributed_optimizer.value_or(false))
    v.add("zero", 1, m + "megatron_lm_use_distributed_optimizer");
}

bool has_megatron(const AccelerateConfig& c) {
  return c.megatron_tp_degree || c.megatron_pp_degree || c.megatron_num_micro_batches ||
         c.megatron_sequence_parallelism || c.megatron_recompute_activations || c.megatron_use_distributed_optimizer ||
         c.megatron_gradient_clipping;
}

// accelerate's DeepSpeed plugin keys (the JSON it names is read after this file).
void add_deepspeed_plugin(Values& v, const AccelerateConfig& c, std::vector<std::string>& warnings) {
  if (c.zero_stage) v.add_accelerate("zero", *c.zero_stage);
  if (c.accum) v.add_accelerate("accum", *c.accum);
  if (c.offload_optimizer_device && *c.offload_optimizer_device != "none") v.add_accelerate("offload_optimizer", true);
  if (c.offload_param_device && *c.offload_param_device != "none") {
    if (c.zero_stage.value_or(0) == 3)
      v.add_accelerate("offload_params", true);
    else
      warnings.push_back(c.source + ": deepspeed_config.offload_param_device works only with zero_stage 3; ignored");
  }
}

}  // namespace

std::vector<SchemaValue> plan_values_from_deepspeed(const DeepSpeedConfig& c, std::vector<std::string>& warnings) {
  Values v{c.source, {}};
  warnings.insert(warnings.end(), c.warnings.begin(), c.warnings.end());
  if (c.micro_batch_size) v.add_deepspeed("micro_batch", *c.micro_batch_size);
  if (c.accum) v.add_deepspeed("accum", *c.accum);
  if (c.train_batch) v.add_deepspeed("batch", *c.train_batch);
  if (c.bf16.value_or(false))
    v.add("precision", "bf16", "bf16.enabled");
  else if (c.fp16.value_or(false))
    v.add("precision", "fp16", "fp16.enabled");
  else if (c.fp16 || c.bf16)
    v.add("precision", "fp32", "fp16/bf16 disabled");
  if (c.zero_stage) v.add_deepspeed("zero", *c.zero_stage);
  if (c.offload_optimizer != OffloadDevice::none) v.add_deepspeed("offload_optimizer", true);
  if (c.offload_param != OffloadDevice::none) v.add_deepspeed("offload_params", true);
  if (c.activation_checkpointing) v.add_deepspeed("checkpoint", "full");
  return std::move(v.list);
}

std::vector<SchemaValue> plan_values_from_accelerate(const AccelerateConfig& c, std::vector<std::string>& warnings) {
  Values v{c.source, {}};
  const std::string& f = c.source;
  warnings.insert(warnings.end(), c.warnings.begin(), c.warnings.end());
  const bool megatron = c.distributed_type == "MEGATRON_LM";
  if (c.num_processes && !megatron) v.add_accelerate("dp", *c.num_processes);
  if (c.num_machines && c.num_processes) {
    if (*c.num_processes % *c.num_machines != 0)
      throw ConfigError(f + ": num_processes " + std::to_string(*c.num_processes) +
                        " does not split over num_machines " + std::to_string(*c.num_machines));
    v.add_accelerate("gpus_per_node", *c.num_processes / *c.num_machines);
  }
  if (c.mixed_precision) {
    const std::string& m = *c.mixed_precision;
    Precision precision = Precision::bf16;
    if (m == "fp8")
      warnings.push_back(f +
                         ": mixed_precision fp8 is estimated as bf16 (fp8 affects matmul inputs, not stored states)");
    else
      precision = parse_precision(m == "false" ? "no" : bounded_excerpt(m), f + ": mixed_precision");
    v.add_accelerate("precision", std::string(precision_name(precision)));
  }
  if (c.distributed_type == "DEEPSPEED")
    add_deepspeed_plugin(v, c, warnings);
  else if (c.distributed_type == "FSDP")
    add_fsdp(v, c, warnings);
  else if (megatron)
    add_megatron(v, c);
  else if (c.distributed_type != "MULTI_GPU" && c.distributed_type != "NO" && c.distributed_type != "MULTI_CPU")
    warnings.push_back(f + ": distributed_type " + bounded_excerpt(c.distributed_type) +
                       " is estimated as plain data parallelism");
  if (!megatron && has_megatron(c))
    warnings.push_back(f + ": megatron_lm_config: ignored (distributed_type is " + bounded_excerpt(c.distributed_type) +
                       ")");
  return std::move(v.list);
}

PlanImport import_plan_files(const std::string& accelerate_path, const std::string& deepspeed_path) {
  PlanImport out;
  if (!accelerate_path.empty()) {
    const AccelerateConfig acc = load_accelerate_config(accelerate_path);
    out.files.push_back(plan_values_from_accelerate(acc, out.warnings));
    if (acc.num_machines) out.nodes = *acc.num_machines;
    if (acc.deepspeed_config_file && acc.distributed_type == "DEEPSPEED")
      out.files.push_back(plan_values_from_deepspeed(
          load_deepspeed_config(*acc.deepspeed_config_file, acc.source + ": deepspeed_config.deepspeed_config_file"),
          out.warnings));
  }
  if (!deepspeed_path.empty())
    out.files.push_back(plan_values_from_deepspeed(load_deepspeed_config(deepspeed_path), out.warnings));
  return out;
}

}  // namespace shardscope
