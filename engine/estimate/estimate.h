// SPDX-License-Identifier: GPL-3.0-or-later
// One estimate, whole: per-rank memory by ledger category (memory_model.h),
// the fit on a GPU and the levers that would make it fit, the time model
// (time_model.h), and optionally DeepSpeed's own estimator figures. The CLI
// prints it, `--json` writes estimate_to_json (schema in README.md), and the
// GUI's memory view will draw the same record.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "estimate/deepspeed_estimator.h"
#include "estimate/estimate_settings.h"
#include "config/gpu_profiles.h"
#include "estimate/memory_model.h"
#include "estimate/model_shape.h"
#include "estimate/time_model.h"

namespace shardscope {

struct EstimateRequest {
  ModelShape model;
  EstimateSettings settings;
  std::optional<GpuProfile> gpu;                 // --gpu: capacity and the time model's peaks
  std::optional<std::int64_t> gpu_memory_bytes;  // --gpu-mem: overrides the profile's capacity
  bool deepspeed_conventions = false;            // also compute DeepSpeed's estimator (stage 2 or 3)
  int nodes = 0;  // DeepSpeed's estimator: accelerate's num_machines; 0 = ceil(dp × pp / gpus_per_node)
  std::vector<std::string> warnings;  // from the importers; more are added
};

// One change that lowers the fullest rank's memory.
struct FitLever {
  std::string change;  // "turn on activation checkpointing"
  std::string flags;   // "--checkpoint full"
  std::int64_t saves_bytes = 0;
  bool fits = false;  // would fit with this change alone
};

struct FitReport {
  bool has_capacity = false;
  std::int64_t capacity_bytes = 0;
  std::string capacity_source;  // "H100 (NVIDIA H100 SXM5 80GB)" or "--gpu-mem 80GB"
  bool fits = false;
  std::int64_t margin_bytes = 0;  // capacity - fullest rank; negative: short by that much
  std::vector<FitLever> levers;   // largest saving first
  std::string summary;  // "does not fit by 11.2 GB: turn on activation checkpointing (−14.0 GB) or ZeRO-3 (−9.0 GB)"
};

struct Estimate {
  ModelShape model;
  EstimateSettings settings;  // resolved: seq filled in
  MemoryEstimate memory;
  TimeEstimate time;
  std::optional<GpuProfile> gpu;
  FitReport fit;
  std::optional<DeepSpeedModelStates> deepspeed;
  std::vector<std::string> warnings;
};

// Throws ConfigError for settings that cannot be estimated (named by flag).
Estimate compute_estimate(const EstimateRequest& request);

// The --json document (README.md, "Memory and time estimates").
nlohmann::json estimate_to_json(const Estimate& estimate);

}  // namespace shardscope
