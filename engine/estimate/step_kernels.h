// SPDX-License-Identifier: GPL-3.0-or-later
// One rank's compute in one optimizer step, kernel by kernel, on the kernel
// model of clock/kernel_model.h (the one a run's virtual clock prices its ops
// with). Per micro-batch of r = b·s/cp tokens (a context-parallel rank holds s/cp of
// each sequence), on one tensor-parallel rank (t):
//   GEMMs: each layer's four weight GEMMs, r × (qkv/t) × h, r × h × (h/t),
//     r × (f or 2f gated)/t × h, r × h × (f/t), each run forward and twice
//     backward (d_in = d_out·Wᵀ, d_W = inᵀ·d_out); the head r × (V/t) × h too.
//   Attention core, b·a/t heads of s × s scores and head size hd:
//     materialized (what the activation formula sbh(34 + 5as/h) keeps, and
//     ShardScope's CPU kernels): QKᵀ and PV as batched GEMMs that write and read
//     the s × s scores, softmax over them (2 passes), backward dP, dV, dQ, dK and
//     the softmax's backward (3 passes);
//     flash (--attention flash; Dao 2023, FlashAttention-2): one forward kernel of
//     4·s²·hd FLOPs per head and two backward of 10 (it recomputes S), reading
//     and writing only q, k, v, o and their gradients;
//     triton (--attention triton: FlashAttention in Triton, llm-foundry's): flash's
//     kernels, forward 1.4 and backward 2 times as long (FlashAttention-2, section 4.1).
//   Context parallelism (ring attention): cp blocks of s/cp × s/cp, each its own
//     kernel(s), equal shares of the causal work (the load-balanced split); with
//     flash, PyTorch's merges of the blocks' outputs in fp32, its K, V copies and
//     its fp32 dQ, dK, dV accumulation as memory-bound passes (step_kernels.cpp).
//   Memory-bound kernels, values per token of d bytes: two norms 2 × (2h forward +
//     3h backward), two residual adds 2 × 3h each way, GELU 2f + 3f or SwiGLU
//     3f + 5f (over t), RoPE on q and k 2 × 2(q + k)/t, cross-entropy 3V/t, the
//     final norm 5h; sequence parallelism splits the norms and adds over t.
//     flash under a causal mask (GPT, Llama) computes only the blocks on and below
//     the diagonal, half of them, at the fused kernel's own measured rate
//     (clock/attention_kernel.h), not the GEMM table's.
//   Memory-bound kernels as eager PyTorch runs them (--runtime eager) pass over
//     memory once per op, norms in fp32 (the byte counts are in step_kernels.cpp);
//     dropout above 0 adds each dropout's mask pass.
//   FP8 linears (--float8 tensorwise; torchao's Float8Linear as torchtitan uses it): every weight GEMM of
//     the layers, forward, backward and recomputed, with 1-byte operands and a 16-bit output on the FP8
//     kernel model (its peak, DeepGEMM's fraction); the head and the attention core stay 16-bit; the casts
//     (amax and scale-and-cast of input, weight and the output's gradient, the transposed copies the FP8
//     GEMMs need backward) are memory-bound passes, counted as torchao's code runs them: under tp with
//     sequence parallelism each block's input cast once on its r/t shard before the all-gather, with
//     FSDP's FP8 all-gather each weight shard cast before every gather (bytes in step_kernels.cpp).
//   Recompute: selective runs the attention core's forward again (or, with
//   --selective-ac op, every second matmul and the memory-bound kernels), full
//   every forward kernel of the layer.
// The stage timed is the last: 1/pp of the layers and the whole head (the
// pipeline waits for its slowest stage), every micro-batch of the step.
#pragma once

#include <vector>

#include "clock/kernel_model.h"
#include "estimate/estimate_settings.h"
#include "estimate/model_shape.h"

namespace shardscope {

// --async-tp: one collective of sequence parallelism in one layer on one micro-batch, and the GEMMs
// PyTorch Inductor's micro-pipeline pass fuses it with (estimate/step_kernels.cpp, async_tp_ops).
struct TensorParallelOp {
  bool all_gather = true;     // else a reduce-scatter
  bool forward = true;        // runs again in full recompute's second forward
  bool fused = true;          // false: the pass finds no single matmul beside it, a plain collective
  double bytes = 0;           // sent per rank: (t − 1)/t · r·h · e
  double gemm_s = 0;          // its GEMMs unsplit, as the layer's weight GEMMs price them (fused only)
  double chunked_gemm_s = 0;  // the same GEMMs as t chunks of r/t tokens, what gemm_s counts when fused
  double exposed_pass_s = 0;  // the fused op's local pass (in memory_s): the shard's copy, or the partials' sum
};

struct StepKernels {
  double gemm_s = 0;        // the weight GEMMs of the layers and the head
  double attention_s = 0;   // the attention core
  double memory_s = 0;      // norms, activation, residual adds, RoPE, cross-entropy
  double gemm_kernels = 0;  // GEMM kernels launched per step (each pays the floor)
  double float8_cast_s = 0;  // --float8: the linears' amax, casts and transposes (part of memory_s)
  // --cp with flash: ring attention's merges, K, V copies and fp32 accumulators (part of memory_s)
  double ring_passes_s = 0;
  // One attention block (a layer's core on one micro-batch is cp of them), forward and backward: what
  // ring attention's transfers hide behind (estimate/time_model.h).
  double attention_block_forward_s = 0, attention_block_backward_s = 0;
  // --async-tp: one layer's collectives on one micro-batch (empty otherwise), the forward ones run
  // `tp_forward_runs` times (2 under full recompute).
  std::vector<TensorParallelOp> tp_ops;
  double tp_forward_runs = 1;
  double total() const { return gemm_s + attention_s + memory_s; }
};

// `attention_fraction`: the fused attention kernel's fraction of peak (0: the GEMMs'). `float8_kernels`: the
// FP8 GEMMs' model (clock/kernel_model.h), used for the layers' linears when settings.float8_linears.
StepKernels step_kernels(const ModelShape& model, const EstimateSettings& settings, const KernelModel& kernels,
                         double attention_fraction = 0, const KernelModel* float8_kernels = nullptr);
// Parameters per layer whose matmuls torchtitan's op policy recomputes (every second one).
double every_second_matmul_parameters(const ModelShape& model, const EstimateSettings& settings);

}  // namespace shardscope
