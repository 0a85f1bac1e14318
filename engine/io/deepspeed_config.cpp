// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/deepspeed_config.h"

#include "core/error.h"
#include "core/json_text.h"
#include "io/config_reader.h"

namespace shardscope {

namespace {
using Keys = std::set<std::string, std::less<>>;

// clang-format off
// Top-level keys of DeepSpeed's config schema (deepspeed/runtime/config.py and
// the documented blocks). Only the ones read below change the estimate.
const Keys kTopKeys = {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
    "optimizer", "scheduler", "fp16", "bf16", "bfloat16", "amp", "gradient_clipping", "prescale_gradients",
    "gradient_predivide_factor", "sparse_gradients", "zero_optimization", "zero_allow_untested_optimizer",
    "zero_force_ds_cpu_optimizer", "steps_per_print", "wall_clock_breakdown", "dump_state", "flops_profiler",
    "activation_checkpointing", "tensorboard", "wandb", "csv_monitor", "comet", "comms_logger",
    "communication_data_type", "seq_parallel_communication_data_type", "elasticity", "aio", "data_efficiency",
    "curriculum_learning", "compression_training", "autotuning", "checkpoint", "data_types", "pipeline",
    "memory_breakdown", "torch_autocast", "disable_allgather", "sparse_attention", "quantize_training", "eigenvalue",
    "progressive_layer_drop", "nebula", "weight_quantization", "hybrid_engine", "compile", "timers",
    "graph_harvesting", "use_data_before_expert_parallelism"};
const Keys kZeroKeys = {"stage", "allgather_partitions", "allgather_bucket_size", "overlap_comm", "reduce_scatter",
    "reduce_bucket_size", "contiguous_gradients", "offload_param", "offload_optimizer", "stage3_max_live_parameters",
    "stage3_max_reuse_distance", "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold",
    "stage3_model_persistence_threshold", "stage3_gather_16bit_weights_on_model_save",
    "stage3_gather_fp16_weights_on_model_save", "stage3_use_all_reduce_for_fetch_params",
    "stage3_module_granularity_threshold", "sub_group_size", "elastic_checkpoint", "round_robin_gradients",
    "cpu_offload", "cpu_offload_params", "cpu_offload_use_pin_memory", "load_from_fp32_weights",
    "ignore_unused_parameters", "legacy_stage1", "zero_hpz_partition_size", "zero_quantized_weights",
    "zero_quantized_nontrainable_weights", "zero_quantized_gradients", "mics_shard_size",
    "mics_hierarchical_params_gather", "memory_efficient_linear", "pipeline_loading_checkpoint",
    "override_module_apply", "log_trace_cache_warnings", "use_multi_rank_bucket_allreduce", "zeropp_loco_param"};
const Keys kOffloadKeys = {"device", "nvme_path", "pin_memory", "buffer_count", "buffer_size", "max_in_cpu",
    "fast_init", "ratio", "pipeline_read", "pipeline_write"};
const Keys kFp16Keys = {"enabled", "auto_cast", "loss_scale", "initial_scale_power", "loss_scale_window",
    "hysteresis", "consecutive_hysteresis", "min_loss_scale", "fp16_master_weights_and_grads"};
const Keys kBf16Keys = {"enabled", "immediate_grad_update", "check_grad_overflow", "bf16_master_weights_and_grads",
    "bf16_optimizer_states"};
const Keys kCheckpointKeys = {"partition_activations", "cpu_checkpointing", "contiguous_memory_optimization",
    "number_checkpoints", "synchronize_checkpoint_boundary", "profile"};
// clang-format on

const Keys kOptimizerParamKeys = {"lr", "betas", "eps", "weight_decay", "adam_w_mode", "torch_adam", "bias_correction",
    "amsgrad"};
const Keys kSchedulerParamKeys = {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type",
    "total_num_steps", "warmup_min_ratio", "cos_min_ratio", "last_batch_iteration"};

// A number that must not be negative (ConfigError naming the key and line).
std::optional<double> non_negative(const JsonConfig& json, const std::vector<std::string>& path) {
  const auto v = json.get_number(path);
  if (v && *v < 0) json.fail(path, "must not be negative");
  return v;
}

void parse_optimizer(const JsonConfig& json, DeepSpeedTrainKeys& t) {
  if (const nlohmann::json* block = json.find({"optimizer"}); block != nullptr && !block->is_object())
    json.fail({"optimizer"}, "expected an object such as {\"type\": \"AdamW\", \"params\": {...}}");
  t.optimizer_type = json.get_string({"optimizer", "type"});
  json.report_unknown_keys({"optimizer", "params"}, kOptimizerParamKeys, "not an Adam parameter", t.warnings);
  t.lr = non_negative(json, {"optimizer", "params", "lr"});
  t.eps = non_negative(json, {"optimizer", "params", "eps"});
  t.weight_decay = non_negative(json, {"optimizer", "params", "weight_decay"});
  t.adam_w_mode = json.get_bool({"optimizer", "params", "adam_w_mode"});
  if (const nlohmann::json* betas = json.find({"optimizer", "params", "betas"});
      betas != nullptr && !json.is_auto({"optimizer", "params", "betas"})) {
    const std::vector<std::string> path = {"optimizer", "params", "betas"};
    if (!betas->is_array() || betas->size() != 2 || !(*betas)[0].is_number() || !(*betas)[1].is_number())
      json.fail(path, "expected two numbers [beta1, beta2]");
    t.beta1 = (*betas)[0].get<double>();
    t.beta2 = (*betas)[1].get<double>();
    if (*t.beta1 < 0 || *t.beta1 >= 1 || *t.beta2 < 0 || *t.beta2 >= 1) json.fail(path, "each beta must be in [0, 1)");
  }
}

void parse_scheduler(const JsonConfig& json, DeepSpeedTrainKeys& t) {
  if (const nlohmann::json* block = json.find({"scheduler"}); block != nullptr && !block->is_object())
    json.fail({"scheduler"}, "expected an object such as {\"type\": \"WarmupLR\", \"params\": {...}}");
  t.scheduler_type = json.get_string({"scheduler", "type"});
  json.report_unknown_keys({"scheduler", "params"}, kSchedulerParamKeys, "not a scheduler parameter", t.warnings);
  t.warmup_num_steps = json.get_int({"scheduler", "params", "warmup_num_steps"}, 0, 1ll << 40);
  t.total_num_steps = json.get_int({"scheduler", "params", "total_num_steps"}, 1, 1ll << 40);
  t.warmup_min_lr = non_negative(json, {"scheduler", "params", "warmup_min_lr"});
  t.warmup_max_lr = non_negative(json, {"scheduler", "params", "warmup_max_lr"});
  t.warmup_min_ratio = non_negative(json, {"scheduler", "params", "warmup_min_ratio"});
  t.cos_min_ratio = non_negative(json, {"scheduler", "params", "cos_min_ratio"});
  t.warmup_type = json.get_string({"scheduler", "params", "warmup_type"});
}

// The keys only a training run reads: buckets, loss scaling, optimizer, scheduler, clipping.
DeepSpeedTrainKeys parse_train_keys(const JsonConfig& json) {
  DeepSpeedTrainKeys t;
  // Bucket sizes are often written 5e8 (a JSON real); DeepSpeed takes int() of them.
  if (const auto v = json.get_number({"zero_optimization", "reduce_bucket_size"})) {
    if (*v < 1 || *v > 1e12) json.fail({"zero_optimization", "reduce_bucket_size"}, "expected 1 to 1e12 elements");
    t.reduce_bucket_size = static_cast<std::int64_t>(*v);
  }
  t.loss_scale = non_negative(json, {"fp16", "loss_scale"});
  if (const auto v = json.get_int({"fp16", "initial_scale_power"}, 0, 64)) t.initial_scale_power = static_cast<int>(*v);
  t.loss_scale_window = json.get_int({"fp16", "loss_scale_window"}, 1, 1ll << 40);
  if (const auto v = json.get_int({"fp16", "hysteresis"}, 1, 1 << 20)) t.hysteresis = static_cast<int>(*v);
  t.min_loss_scale = non_negative(json, {"fp16", "min_loss_scale"});
  parse_optimizer(json, t);
  parse_scheduler(json, t);
  t.gradient_clipping = non_negative(json, {"gradient_clipping"});
  t.prescale_gradients = json.get_bool({"prescale_gradients"});
  t.gradient_predivide_factor = non_negative(json, {"gradient_predivide_factor"});
  t.fp16_master_weights_and_grads = json.get_bool({"fp16", "fp16_master_weights_and_grads"});
  return t;
}

OffloadDevice offload_device(const JsonConfig& json, const std::string& block, std::vector<std::string>& warnings) {
  const std::vector<std::string> path = {"zero_optimization", block};
  const nlohmann::json* node = json.find(path);
  if (node == nullptr) return OffloadDevice::none;
  if (!node->is_object()) json.fail(path, "expected an object such as {\"device\": \"cpu\"}");
  json.report_unknown_keys(path, kOffloadKeys, "not an offload setting", warnings);
  const std::string device = json.get_string({"zero_optimization", block, "device"}).value_or("none");
  if (device == "none") return OffloadDevice::none;
  if (device == "cpu") return OffloadDevice::cpu;
  if (device == "nvme") return OffloadDevice::nvme;
  json.fail({"zero_optimization", block, "device"}, "'" + bounded_excerpt(device) + "' is not one of none, cpu, nvme");
}
}  // namespace

DeepSpeedConfig parse_deepspeed_config(std::string_view json_text, const std::string& source) {
  const JsonConfig json{std::string(json_text), source};
  DeepSpeedConfig c;
  c.source = source;
  c.train = parse_train_keys(json);
  auto& w = c.warnings;
  json.report_unknown_keys({}, kTopKeys, "not a DeepSpeed setting", w);
  for (const char* key : {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"})
    if (json.is_auto({key}))
      w.push_back(json.where({key}) + ": \"auto\" (filled in by the HF Trainer); the command line or defaults decide");
  if (const auto v = json.get_int({"train_micro_batch_size_per_gpu"}, 1, 1 << 24))
    c.micro_batch_size = static_cast<int>(*v);
  if (const auto v = json.get_int({"gradient_accumulation_steps"}, 1, 1 << 24)) c.accum = static_cast<int>(*v);
  c.train_batch = json.get_int({"train_batch_size"}, 1, 1ll << 40);

  // Precision: fp16 / bf16 (or the older "bfloat16") / apex "amp" blocks.
  json.report_unknown_keys({"fp16"}, kFp16Keys, "not an fp16 setting", w);
  json.report_unknown_keys({"bf16"}, kBf16Keys, "not a bf16 setting", w);
  c.fp16 = json.get_bool({"fp16", "enabled"});
  c.bf16 = json.get_bool({"bf16", "enabled"});
  if (!c.bf16) c.bf16 = json.get_bool({"bfloat16", "enabled"});
  if (const auto amp = json.get_bool({"amp", "enabled"}); amp && *amp && !c.fp16) c.fp16 = true;
  for (const char* block : {"fp16", "bf16"})
    if (json.is_auto({block, "enabled"}))
      w.push_back(json.where({block, "enabled"}) +
                  ": \"auto\"; the command line or accelerate's mixed_precision decides");
  if (c.fp16.value_or(false) && c.bf16.value_or(false))
    json.fail({"bf16", "enabled"}, "fp16 and bf16 are both enabled; DeepSpeed accepts only one");

  // ZeRO.
  if (const nlohmann::json* zero = json.find({"zero_optimization"}); zero != nullptr && !zero->is_object()) {
    json.fail({"zero_optimization"}, "expected an object such as {\"stage\": 2}");
  }
  json.report_unknown_keys({"zero_optimization"}, kZeroKeys, "not a zero_optimization setting", w);
  if (const auto stage = json.get_int({"zero_optimization", "stage"}, 0, 3)) c.zero_stage = static_cast<int>(*stage);
  c.offload_optimizer = offload_device(json, "offload_optimizer", w);
  c.offload_param = offload_device(json, "offload_param", w);
  if (json.get_bool({"zero_optimization", "cpu_offload"}).value_or(false) && c.offload_optimizer == OffloadDevice::none)
    c.offload_optimizer = OffloadDevice::cpu;  // the deprecated spelling of offload_optimizer.device = cpu
  if (c.offload_param != OffloadDevice::none && c.zero_stage.value_or(0) != 3) {
    w.push_back(json.where({"zero_optimization", "offload_param"}) +
                ": parameter offload works only with stage 3; ignored");
    c.offload_param = OffloadDevice::none;
  }
  if (c.offload_optimizer == OffloadDevice::nvme || c.offload_param == OffloadDevice::nvme)
    w.push_back(source + ": NVMe offload (ZeRO-Infinity) is counted as host memory");

  // Activation checkpointing: the block configures deepspeed.checkpointing; the
  // model's code decides which layers use it. Assume every layer does.
  if (const nlohmann::json* block = json.find({"activation_checkpointing"})) {
    if (!block->is_object()) json.fail({"activation_checkpointing"}, "expected an object");
    json.report_unknown_keys({"activation_checkpointing"}, kCheckpointKeys, "not an activation_checkpointing setting",
                             w);
    c.activation_checkpointing = true;
    c.partition_activations = json.get_bool({"activation_checkpointing", "partition_activations"}).value_or(false);
    c.cpu_checkpointing = json.get_bool({"activation_checkpointing", "cpu_checkpointing"}).value_or(false);
    w.push_back(json.where({"activation_checkpointing"}) +
                ": assuming every layer is checkpointed (full recompute); pass --checkpoint to say otherwise");
    if (c.partition_activations)
      w.push_back(json.where({"activation_checkpointing", "partition_activations"}) +
                  ": no effect here: DeepSpeed splits checkpointed activations over the tensor-parallel group, "
                  "which has one rank in every layout of this engine");
    if (c.cpu_checkpointing)
      w.push_back(json.where({"activation_checkpointing", "cpu_checkpointing"}) +
                  ": moves checkpoints to the CPU; not modeled");
  }
  return c;
}

DeepSpeedConfig load_deepspeed_config(const std::string& path, std::string_view what) {
  return parse_deepspeed_config(read_config_file(path, what), path);
}

}  // namespace shardscope
