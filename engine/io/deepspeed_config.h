// SPDX-License-Identifier: GPL-3.0-or-later
// DeepSpeed JSON config import (https://www.deepspeed.ai/docs/config-json/):
// the settings that decide memory (batch split, fp16/bf16, ZeRO stage,
// offload, activation checkpointing). Keys DeepSpeed has but memory does not
// depend on are accepted; keys DeepSpeed does not have are warnings, with
// their line. "auto" (filled in by the Hugging Face Trainer) counts as unset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope {

enum class OffloadDevice { none, cpu, nvme };

struct DeepSpeedConfig {
  std::string source;
  std::optional<int> micro_batch;                         // train_micro_batch_size_per_gpu
  std::optional<int> accum;                               // gradient_accumulation_steps
  std::optional<std::int64_t> train_batch;                // train_batch_size = micro x accum x dp
  std::optional<bool> fp16;                               // fp16.enabled (or amp.enabled)
  std::optional<bool> bf16;                               // bf16.enabled
  std::optional<int> zero_stage;                          // zero_optimization.stage
  OffloadDevice offload_optimizer = OffloadDevice::none;  // zero_optimization.offload_optimizer.device
  OffloadDevice offload_param = OffloadDevice::none;      // zero_optimization.offload_param.device
  bool activation_checkpointing = false;                  // an activation_checkpointing block is present
  bool partition_activations = false;                     // activation_checkpointing.partition_activations
  bool cpu_checkpointing = false;                         // activation_checkpointing.cpu_checkpointing
  std::vector<std::string> warnings;                      // unknown keys, "auto" values, settings not modeled
};

// FormatError for malformed JSON (line and column), ConfigError for a bad value (key and line).
DeepSpeedConfig parse_deepspeed_config(std::string_view json_text, const std::string& source);
// `what` names where the path came from in messages: the flag, or the file and key that named it.
DeepSpeedConfig load_deepspeed_config(const std::string& path, std::string_view what = "--deepspeed");

}  // namespace shardscope
