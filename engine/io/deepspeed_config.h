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

// The keys a training run reads beyond the estimator's (config/run_import.h
// maps them onto a RunConfig). Absent keys stay nullopt; a value of the wrong
// type or a negative one is a ConfigError naming the key and line at parse time.
struct DeepSpeedTrainKeys {
  std::optional<std::int64_t> reduce_bucket_size;  // zero_optimization.reduce_bucket_size (elements)
  std::optional<double> loss_scale;                // fp16.loss_scale: 0 dynamic, else static
  std::optional<int> initial_scale_power;          // fp16.initial_scale_power
  std::optional<std::int64_t> loss_scale_window;   // fp16.loss_scale_window
  std::optional<int> hysteresis;                   // fp16.hysteresis
  std::optional<double> min_loss_scale;            // fp16.min_loss_scale
  std::optional<std::string> optimizer_type;       // optimizer.type (Adam, AdamW, Lamb, ...)
  std::optional<double> lr, beta1, beta2, eps, weight_decay;  // optimizer.params
  std::optional<bool> adam_w_mode;                 // optimizer.params.adam_w_mode
  std::optional<std::string> scheduler_type;       // scheduler.type (WarmupLR, WarmupCosineLR, ...)
  std::optional<std::int64_t> warmup_num_steps, total_num_steps;  // scheduler.params
  std::optional<double> warmup_min_lr, warmup_max_lr, warmup_min_ratio, cos_min_ratio;
  std::optional<std::string> warmup_type;          // scheduler.params.warmup_type: log or linear
  std::optional<double> gradient_clipping;
  // Settings that change the arithmetic of a step, which the engine does not follow when set.
  std::optional<bool> prescale_gradients;             // divide by dp before the all-reduce
  std::optional<double> gradient_predivide_factor;    // 1.0: none
  std::optional<bool> fp16_master_weights_and_grads;  // fp16.fp16_master_weights_and_grads
  std::vector<std::string> warnings;  // unknown optimizer / scheduler params (the estimator does not read them)
};

struct DeepSpeedConfig {
  std::string source;
  std::optional<int> micro_batch_size;                    // train_micro_batch_size_per_gpu
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
  DeepSpeedTrainKeys train;                               // what `train --deepspeed` also reads
};

// FormatError for malformed JSON (line and column), ConfigError for a bad value (key and line).
DeepSpeedConfig parse_deepspeed_config(std::string_view json_text, const std::string& source);
// `what` names where the path came from in messages: the flag, or the file and key that named it.
DeepSpeedConfig load_deepspeed_config(const std::string& path, std::string_view what = "--deepspeed");

}  // namespace shardscope
