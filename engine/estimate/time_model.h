// SPDX-License-Identifier: GPL-3.0-or-later
// The time and communication model of one optimizer step. It is a model, not
// a measurement: FLOPs from the model's shape, bytes from the collectives each
// strategy runs, seconds from a GPU profile's data-sheet peaks: by default
// through the measured kernel model (clock/kernel_model.h: every GEMM, the
// attention core and the memory-bound kernels, estimate/step_kernels.h) at the
// GPU's sustained clock (clock/sustained_clock.h), the data-parallel traffic
// overlapped with compute as its strategy overlaps it (dp_exposed_s); with
// --time-model flat every FLOP at --efficiency X of peak (one assumption, 0.5).
//   FLOPs per token: 6N + 12·L·h·s (Chowdhery et al. 2022, PaLM, appendix B;
//     N = parameters read by matmuls; 12·L·h·s is attention's QKᵀ and AV,
//     forward + backward). Full recompute adds a forward: 8N + 16·L·h·s;
//     selective adds the attention core again: 6N + 16·L·h·s.
//   Bytes each data-parallel rank sends per step (plan/data_parallel_traffic.h,
//   the engine's count: Ψ_s padded as its collectives pad it):
//     DDP ring all-reduce          2(Nd−1)/Nd · g Ψ_s
//     ZeRO-1 reduce-scatter + all-gather   (Nd−1)/Nd · (g + p) Ψ'
//     ZeRO-2 reduce-scatter every micro-step, all-gather once   (Nd−1)/Nd · (K g + p) Ψ'
//     ZeRO-3 all-gather twice + reduce-scatter, every micro-step  K (Nd−1)/Nd · ((2p + g) Ψ' + e·pE')
//     naive DataParallel, rank 0: broadcast + gather   (Nd−1)(p + g) Ψ_s
//     pipeline p2p, an inner stage: activation forward, gradient backward   2·K·b·s·h·d
//   (p, g, d: bytes per parameter, gradient and activation value; K = accum × m
//   micro-batches per step, m the pipeline's micro-batches per accumulation step.)
//   Pipeline bubble (p−1)/(m+p−1) (GPipe, Huang et al. 2019; 1F1B has the same).
//   Tensor parallelism (Megatron-LM), per rank: each layer of the largest stage
//     runs 4 ring all-reduces of b·s·h values per micro-batch (6 under full
//     recompute), each sending 2(t−1)/t of it: L_s · K · 4 · 2(t−1)/t · b·s·h · d
//     (plan/tensor_parallel_traffic.h). A layer waits for them, so their time is
//     on the critical path, over the node's link (NVLink) when tp fits in a node;
//     under --tp-comm-overlap the GEMMs hide them, 18.9% slower while they do
//     (clock/overlap_contention.h; under --async-tp each collective hides behind its own
//     GEMMs, in tp chunks), as --overlap-param-gather hides ZeRO-1/2's
//     all-gather behind the next step's first forward.
//   Context parallelism (ring attention, PyTorch's context_parallel as torchtitan
//     9dec370 runs it), per rank, each layer of the largest stage per micro-batch,
//     B = 2·b·(s/cp)·h/t · d (its keys and values, every head's as the kernel takes them):
//     forward an all-gather of the K, V blocks, (cp − 1)·B (again under recompute);
//     backward the all-gather again, (cp − 1)·B, and each block's dK, dV accumulator
//     passed round in fp32, cp · B·4/d: L_s · K · ((cp − 1)(1 or 2) + (cp − 1) + 4cp/d) · B.
//     Kernel model: the all-gather moves beside the first (local) block's kernel, each dK, dV
//     transfer beside the next block's, the last one exposed; the ranks sharing parameters are
//     dp × cp (torchtitan's dp_shard_cp mesh, Megatron-LM's dp-cp group): the data-parallel
//     collectives and the optimizer's shards run over them.
#pragma once

#include <cstdint>
#include <string>

#include "estimate/estimate_settings.h"
#include "config/gpu_profiles.h"
#include "estimate/model_shape.h"

namespace shardscope {

struct TimeEstimate {
  std::int64_t tokens_per_step = 0;    // global batch × s
  std::int64_t matmul_parameters = 0;  // N
  double flops_per_token = 0;          // what runs, recompute included
  std::string flops_formula;
  double model_flops_per_token = 0;  // 6N + 12·L·h·s whatever the recompute: MFU's numerator (PaLM)
  double flops_per_step = 0;  // all ranks together
  double dp_bytes = 0;        // sent per rank per step by the data-parallel collectives
  double dp_gather_bytes = 0;  // ZeRO-1/2: the all-gather of the updated shards' part of dp_bytes
  std::string dp_formula;
  double pp_bytes = 0;  // sent per step by an inner pipeline stage
  std::string pp_formula;
  double tp_bytes = 0;  // sent per rank per step by the tensor-parallel all-reduces (0 with tp 1)
  std::string tp_formula;
  // Expert parallelism: MoE's all-to-all sent per rank per step (0 with ep 1), at the capacity's bound.
  double ep_bytes = 0;
  std::string ep_formula;
  // Context parallelism: ring attention's key/value traffic sent per rank per step (0 with cp 1).
  double cp_bytes = 0;
  std::string cp_formula;
  double bubble_fraction = 0;
  std::string bubble_formula;

  // With a GPU profile (has_gpu), seconds per step on it:
  bool has_gpu = false;
  std::string gpu;
  double peak_tflops = 0, efficiency = 0;  // measured kernels: what the step's FLOPs reach of peak
  double compute_s = 0;                    // the kernels below; flat: FLOPs per rank / (peak × efficiency)
  bool measured_kernels = false;           // compute_s from clock/kernel_model.h, in these parts:
  double gemm_s = 0, attention_s = 0, memory_bound_s = 0;
  double gemm_kernels = 0;                                          // GEMM kernels per rank per step
  double gemm_fraction = 0, memory_fraction = 0, gemm_floor_s = 0;  // the kernel model's constants
  double attention_fraction = 0;  // the fused attention kernel's of peak (clock/attention_kernel.h); 0: the GEMMs'
  double memory_gbps = 0;         // the memory bandwidth the step ran at (the profile's or --gpu-bandwidth)
  // --float8: the FP8 linears' dense peak and measured fraction (clock/kernel_model.h), and the seconds of
  // their casts (part of memory_bound_s); 0 without it. MFU stays over the 16-bit peak.
  double float8_peak_tflops = 0, float8_gemm_fraction = 0, float8_cast_s = 0;
  // --cp: the memory-bound passes PyTorch's ring attention runs around its blocks (the fp32 merges, the
  // K/V copies, the fp32 gradient accumulation; estimate/step_kernels.h), part of memory_bound_s.
  double ring_passes_s = 0;
  double sustained_clock =
      1;  // the GEMMs' clock under the power limit, of the microbenchmark's (clock/sustained_clock.h)
  // Kernel model: the data-parallel seconds not hidden behind compute (the rest overlaps it, as the strategy
  // schedules it: DDP's and ZeRO-1/2's buckets behind backward, ZeRO-3's gathers and reduce-scatters behind
  // the neighbouring layers' compute; the first or last layer's share always shows). The flat model: dp_comm_s.
  double dp_exposed_s = 0;
  double bubble_s = 0;     // idle pipeline time: compute × bubble / (1 − bubble)
  double optimizer_s = 0;  // AdamW is memory-bound: 28 bytes per parameter updated / memory bandwidth (× fraction)
  double dp_comm_s = 0;    // dp_bytes / link bandwidth
  double pp_comm_s = 0;
  double tp_comm_s = 0;     // tp_bytes / link bandwidth
  double tp_exposed_s =
      0;  // of tp_comm_s on the critical path: all of it, but what --tp-comm-overlap or --async-tp hides
  // Kernel model: what the GEMMs lose to the collectives they hide (--tp-comm-overlap, --overlap-param-gather;
  // clock/overlap_contention.h), on the critical path.
  double overlap_contention_s = 0;
  double ep_comm_s = 0;  // ep_bytes / the ep group's link, never overlapped (between router and experts)
  double cp_comm_s = 0;  // cp_bytes / the cp group's link
  double cp_exposed_s = 0;  // of cp_comm_s, what the attention blocks do not hide (flat: all of it)
  std::string dp_link, pp_link, tp_link, ep_link, cp_link;
  double step_s = 0;             // flat: nothing overlapped (an upper bound); kernels: dp_exposed_s of dp_comm_s
  double step_overlapped_s = 0;  // data-parallel communication hidden behind compute (a lower bound)
  double tokens_per_s = 0;       // tokens_per_step / step_s
  double tokens_per_s_per_gpu = 0;
  // FLOPs run per GPU per second, recompute included (what Megatron-LM reports as TFLOP/s per GPU).
  double tflops_per_gpu = 0;
  // Model FLOPs utilization (Chowdhery et al. 2022, PaLM, app. B): model_flops_per_token × tokens/s
  // per GPU over the peak, so recompute does not count (what llm.c and torchtitan report).
  double mfu = 0;
  std::string note = "a model, not a measurement";
};

TimeEstimate estimate_time(const ModelShape& model, const EstimateSettings& settings, const GpuProfile* gpu);

}  // namespace shardscope
