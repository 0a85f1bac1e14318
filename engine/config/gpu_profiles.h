// SPDX-License-Identifier: GPL-3.0-or-later
// GPU profiles for the fit check, the time model and the run's --gpu-profile
// (the virtual clock's modeled GPU; in config/ so the run schema can list them):
// memory, peak dense
// FLOP/s per precision, memory and link bandwidth, from the vendors' data
// sheets (docs/ESTIMATE.md lists each value with its source). These are
// specifications, not measurements; the time model built on them is a model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/run_choices.h"

namespace shardscope {

struct GpuProfile {
  std::string name;               // what --gpu takes: "H100"
  std::string description;        // "NVIDIA H100 SXM5 80GB"
  std::int64_t memory_bytes = 0;  // what the CUDA driver reports as total memory
  double fp32_tflops = 0;         // dense, no tensor cores (PyTorch's fp32 matmuls without TF32)
  double tf32_tflops = 0;         // dense tensor cores
  double fp16_tflops = 0;         // dense tensor cores, fp32 accumulate (bf16 the same on every profile)
  double memory_gbps = 0;         // HBM / GDDR bandwidth, GB/s
  double link_gbps = 0;           // GPU-to-GPU inside a node, per direction, GB/s
  std::string link;               // "NVLink 4 (900 GB/s total)"
  double internode_gbps = 0;      // per GPU between nodes, per direction, GB/s (assumed network)
  std::string internode;
  // Dense FP8 tensor cores (E4M3/E5M2 in, fp32 accumulate: what FP8 training's GEMMs run); 0: the GPU has
  // none (A100). Only the estimator's --float8 reads it: the engine itself trains in fp32/fp16/bf16.
  double fp8_tflops = 0;

  double peak_tflops(Precision precision) const { return precision == Precision::fp32 ? fp32_tflops : fp16_tflops; }
};

const std::vector<GpuProfile>& gpu_profiles();
// Case-insensitive, ignoring '-' and ' ' ("a100-80gb" = "A100 80GB"). Throws
// ConfigError naming --gpu and listing the profiles.
const GpuProfile& find_gpu_profile(std::string_view name);
// "80GB" (10^9), "80GiB" (2^30), "24G" (= GB), "512MB", "81920MiB", "80" (GB).
// Positive, at most 10^6 of its unit. Throws ConfigError naming --gpu-mem.
std::int64_t parse_memory_size(std::string_view text);

}  // namespace shardscope
