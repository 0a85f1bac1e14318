// SPDX-License-Identifier: GPL-3.0-or-later
// DeepSpeed's own model-state estimators, reproduced as an option so their
// figures can stand beside ShardScope's. They count model states only (no
// activations, no buffers) and multiply the CPU side by a buffer factor
// (default 1.5) that this struct keeps separate. Read from
// deepspeed/runtime/zero/stage_1_and_2.py and stage3.py (deepspeedai/DeepSpeed,
// 2025); Ψ = total_params, N = gpus per node x nodes:
//
//   estimate_zero2_model_states_mem_needs(Ψ, gpus_per_node, nodes, cpu_offload, factor)
//     offload:  gpu = 2Ψ                       cpu = Ψ · max(4N, 16) · factor
//     none:     gpu = 2Ψ + int(18Ψ / N)        cpu = Ψ · 4 · gpus_per_node · factor
//   (releases before 2024 used gpu = 4Ψ + int(16Ψ / N) without offload)
//
//   estimate_zero3_model_states_mem_needs(Ψ, largest_layer, gpus_per_node, nodes,
//                                         cpu_offload, cpu_offload_params, zero_init, factor)
//     largest_layer_memory = 4 · largest_layer
//     offload optimizer + params: gpu = largest_layer_memory
//                                 cpu = Ψ · 18 / nodes · factor   (zero_init; else Ψ · max(4 gpus_per_node, 18 / nodes)
//                                 · factor)
//     offload optimizer only:     gpu = largest_layer_memory + int(2Ψ / N)
//                                 cpu = Ψ · 16 / nodes · factor   (zero_init; else Ψ · max(4 gpus_per_node, 16 / nodes)
//                                 · factor)
//     no offload:                 gpu = largest_layer_memory + int(18Ψ / N)
//                                 cpu = largest_layer · 4 · gpus_per_node · factor (zero_init; else Ψ · 4 ·
//                                 gpus_per_node · factor)
//
// DeepSpeed prints these divided by 2^30 and labelled "GB" (they are GiB).
#pragma once

#include <cstdint>
#include <string>

namespace shardscope {

struct DeepSpeedModelStates {
  int stage = 2;
  bool cpu_offload = false;               // offload_optimizer
  bool cpu_offload_params = false;        // offload_param (stage 3)
  bool zero_init = true;                  // stage 3: zero.Init builds the model partitioned
  double buffer_factor = 1.5;             // additional_buffer_factor, applied to the CPU side only
  std::int64_t gpu_bytes = 0;             // per GPU
  double cpu_bytes_before_factor = 0;     // per node, without the buffer factor
  std::int64_t cpu_bytes = 0;             // int(cpu_bytes_before_factor · buffer_factor), as DeepSpeed returns it
  std::int64_t largest_layer_memory = 0;  // stage 3: 4 · largest_layer_params
  std::string gpu_formula, cpu_formula;
};

DeepSpeedModelStates deepspeed_zero2_model_states(std::int64_t total_params, int gpus_per_node, int nodes,
                                                  bool cpu_offload, double buffer_factor = 1.5);

DeepSpeedModelStates deepspeed_zero3_model_states(std::int64_t total_params, std::int64_t largest_layer_params,
                                                  int gpus_per_node, int nodes, bool cpu_offload,
                                                  bool cpu_offload_params, bool zero_init = true,
                                                  double buffer_factor = 1.5);

}  // namespace shardscope
