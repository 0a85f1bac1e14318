// SPDX-License-Identifier: GPL-3.0-or-later
// One mixture-of-experts MLP on the kernel model (clock/kernel_model.h), per
// micro-batch of r = b·s tokens, on one rank, as model/mixture_of_experts.cpp
// runs it: the MoE half of a layer that estimate/step_kernels.h prices.
//   Router: one GEMM r × E × h forward (logits), two backward.
//   Experts: the rank holds E/ep of them; under balanced routing each gets
//     r·k/E rows from each of the ep ranks of its group, ep·r·k/E rows in all
//     (at most its capacity c = ceil(f·r·k/E) from each rank where the model has
//     one). Frameworks that drop nothing (Megatron-LM, torchtitan) and ShardScope's
//     kernels (which pack the rows each expert took, not c) run exactly those rows;
//     none pads every expert to c, so no padding is priced. Per expert, GELU: fc
//     (rows × f/t × h) and proj (rows × h × f/t); SwiGLU: gate and up as one GEMM of
//     2f/t (Megatron-LM's fc1), and down. Each at the table's fraction for that
//     shape (few rows run at the low fractions of the table's narrow entries),
//     forward once and backward twice (d_in, d_W). Launches: ShardScope's kernels
//     call one GEMM per expert (E/ep a projection); grouped-GEMM frameworks
//     (Megatron-LM's --moe-grouped-gemm, torchtitan's _grouped_mm) one per
//     projection, which pays the floor once for all the rank's experts.
//   Shared experts (DeepSeek-V3's, always on): one MLP of shared·f on all r rows.
//   Memory-bound passes, d bytes a value: softmax and top-k over the r × E logits,
//     the permute that copies each token's row to its k experts (r·k rows of h),
//     the activation on the experts' r·k rows, the combine that sums each token's
//     k outputs; each one's backward. The routing's traffic is moe_routing_traffic
//     (model/mixture_of_experts.h), which the GPU-profile clock prices the
//     engine's routing loops with too.
//   Tensor parallelism splits each expert's f over t (the router stays whole).
#pragma once

#include "clock/kernel_model.h"
#include "estimate/estimate_settings.h"
#include "estimate/model_shape.h"

namespace shardscope {

// Seconds (and GEMM launches) of one MoE layer's MLP per micro-batch, forward and backward.
struct MoeLayerKernels {
  double gemm_forward = 0, gemm_backward = 0;
  double memory_forward = 0, memory_backward = 0;
  double kernels_forward = 0, kernels_backward = 0;
  double rank_experts = 0;  // E/ep
  double expert_rows = 0;   // rows each of them runs: ep·r·k/E
};

MoeLayerKernels moe_layer_kernels(const ModelShape& model, const EstimateSettings& settings, const KernelModel& km);

// The parameters of a MoE layer's MLP: its E experts, shared experts and router (the rest of
// the layer is attention and norms).
double moe_mlp_parameters(const ModelShape& model);

}  // namespace shardscope
