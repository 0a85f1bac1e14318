// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face accelerate YAML config import (what `accelerate config` writes,
// read by accelerate's ClusterConfig): processes and machines, mixed
// precision, and the DeepSpeed or FSDP plugin block. Unknown keys are
// warnings with their line; a value of the wrong type is a ConfigError naming
// the key and line; a file that is not YAML is a FormatError.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope {

struct AccelerateConfig {
  std::string source;
  std::string distributed_type;                // NO, MULTI_GPU, DEEPSPEED, FSDP, MULTI_CPU, ...
  std::optional<std::string> mixed_precision;  // no, fp16, bf16, fp8
  std::optional<int> num_processes;            // all processes of all machines (the world size)
  std::optional<int> num_machines;
  // deepspeed_config: (accelerate's DeepSpeed plugin)
  std::optional<int> zero_stage;
  std::optional<int> accum;                             // gradient_accumulation_steps
  std::optional<double> gradient_clipping;              // gradient_clipping
  std::optional<std::string> offload_optimizer_device;  // none, cpu, nvme
  std::optional<std::string> offload_param_device;
  std::optional<std::string> deepspeed_config_file;  // resolved against the YAML's folder when it exists there
  // fsdp_config:
  std::optional<std::string> fsdp_sharding_strategy;  // FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD (or 1-4)
  std::optional<bool> fsdp_offload_params;
  std::optional<bool> fsdp_activation_checkpointing;
  // megatron_lm_config: (accelerate's Megatron-LM plugin, distributed_type MEGATRON_LM)
  std::optional<int> megatron_tp_degree, megatron_pp_degree, megatron_num_micro_batches;
  std::optional<bool> megatron_sequence_parallelism;
  std::optional<bool> megatron_recompute_activations;      // Megatron's selective recompute
  std::optional<bool> megatron_use_distributed_optimizer;  // shards the optimizer states over dp: ZeRO-1
  std::optional<double> megatron_gradient_clipping;
  std::vector<std::string> warnings;
};

AccelerateConfig parse_accelerate_config(std::string_view yaml_text, const std::string& source);
AccelerateConfig load_accelerate_config(const std::string& path);

}  // namespace shardscope
