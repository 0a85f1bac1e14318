// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/time_model.h"

#include <algorithm>
#include <cmath>

#include "clock/attention_kernel.h"
#include "clock/overlap_contention.h"
#include "clock/sustained_clock.h"
#include "core/checked_math.h"
#include "core/error.h"
#include "estimate/formula_text.h"
#include "estimate/memory_model.h"
#include "estimate/split_backward_schedules.h"
#include "estimate/stage_placement.h"
#include "estimate/step_kernels.h"
#include "plan/data_parallel_traffic.h"
#include "plan/expert_parallel_traffic.h"
#include "plan/pipeline_schedule.h"
#include "plan/tensor_parallel_traffic.h"

namespace shardscope {

namespace {

// FLOPs per token (PaLM's 6N + 12·L·h·s, and what recompute runs again), and per step. The
// attention's h is the queries' width a·d (PaLM's H·Q): the hidden size unless head_dim says otherwise.
void count_flops(TimeEstimate& t, const ModelShape& model, const EstimateSettings& s) {
  const double L = static_cast<double>(model.layers), h = model.query_width(), seq = s.seq;
  t.tokens_per_step = checked_mul(s.global_batch(), s.seq);
  // A mixture of experts: a token's matmuls read k of the E experts (the active parameters).
  t.matmul_parameters =
      checked_sub(checked_sub(model.parameters(), model.lookup_only_parameters), model.idle_expert_parameters);
  const double N = static_cast<double>(t.matmul_parameters);
  std::string n_text = "N = " + grouped(t.matmul_parameters) + " parameters read by matmuls";
  if (model.idle_expert_parameters > 0)
    n_text += " (a token's " + std::to_string(model.top_k) + " of " + std::to_string(model.experts) + " experts)";
  if (model.attention_width > 0 && model.attention_width != model.hidden)
    n_text += "; in the attention's term h is the heads' width a·d = " + grouped(model.attention_width);
  t.model_flops_per_token = 6 * N + 12 * L * h * seq;
  switch (s.recompute) {
    case Recompute::none:
      t.flops_per_token = 6 * N + 12 * L * h * seq;
      t.flops_formula = "6N + 12·L·h·s per token (PaLM, Chowdhery et al. 2022, app. B), " + n_text;
      break;
    case Recompute::selective:
      if (s.selective_every_second_matmul) {  // torchtitan's op policy: the attention kernel's output kept
        const double again = every_second_matmul_parameters(model, s);
        t.flops_per_token = 6 * N + 2 * L * again + 12 * L * h * seq;
        t.flops_formula = "6N + 2·L·" + grouped(static_cast<std::int64_t>(again)) +
                          " + 12·L·h·s per token (the op policy recomputes every second matmul of a layer), " + n_text;
        break;
      }
      t.flops_per_token = 6 * N + 16 * L * h * seq;
      t.flops_formula = "6N + 16·L·h·s per token (selective recompute runs the attention core twice), " + n_text;
      break;
    case Recompute::full:
      t.flops_per_token = 8 * N + 16 * L * h * seq;
      t.flops_formula = "8N + 16·L·h·s per token (full recompute adds one forward), " + n_text;
      break;
  }
  t.flops_per_step = t.flops_per_token * static_cast<double>(t.tokens_per_step);
}

// The ranks holding the same parameters: dp × cp. Each context-parallel rank computes gradients from its
// s/cp of every sequence, so torchtitan's FSDP (its dp_shard_cp mesh) and Megatron-LM (its dp-cp group)
// reduce and shard them over the dp and cp ranks together: one data-parallel group of dp·cp.
int data_parallel_ranks(const EstimateSettings& s) {
  return s.layout.dp() * s.layout.cp();
}

ParallelLayout gradient_layout(const EstimateSettings& s) {
  ParallelLayout plan = s.plan_layout();
  plan.axes[Axis::dp] = data_parallel_ranks(s);
  plan.axes[Axis::cp] = 1;
  return plan;
}

// Ψ_s of the largest stage: its data-parallel collectives are the longest.
std::int64_t largest_stage_parameters(const ModelShape& model, const EstimateSettings& s) {
  std::int64_t psi_s = 0;
  for (int stage = 0; stage < s.layout.pp(); ++stage) psi_s = std::max(psi_s, placed_stage_parameters(model, s, stage));
  return psi_s;
}

// --float8-all-gather: the sharded parameters' all-gather carries the FP8 linears' weights at 1 byte each:
// ZeRO-3 gathers in every micro-step's forward and backward, K(N−1)/N · 2(p − 1)Ψ_lin fewer bytes; ZeRO-1/2
// once a step (torchtitan's FSDP under pipeline parallelism keeps the gathered parameters through the
// step), (N−1)/N · (p − 1)Ψ_lin. Ψ_lin: the stage's linear weights on one tp rank (its layers' parameters
// less their norms); the embeddings, norms and head gather at p.
double float8_all_gather(DataParallelTraffic& traffic, const ModelShape& model, const EstimateSettings& s,
                         const ShardingRules& rules, const StageUnits& stage) {
  const int N = data_parallel_ranks(s);
  if (N == 1) return 0;
  const int layers = stage.layers.chunks * stage.layers.layer_count();  // equal chunks (model_config.h)
  // What a layer keeps whole (norms, row-parallel biases: a config file's count, model_shape.h) is no FP8 weight.
  // (That count also holds DeepSeek-V3's duplicated down-projections, which are linears; --float8 refuses
  // models with experts, so it never meets them here.)
  const double norms = model.layer_replicated_parameters > 0
                           ? static_cast<double>(model.layer_replicated_parameters)
                           : static_cast<double>(model.hidden) * (model.architecture == "llama" ? 2 : 4);
  const double linear = layers * (static_cast<double>(model.layer_parameters) - norms) / s.layout.tp();
  const double p = rules.bytes_per_parameter().parameters;
  const double gathers = s.zero_stage == 3 ? 2.0 * static_cast<double>(s.micro_steps()) : 1.0;
  const double saved = gathers * (N - 1.0) / N * (p - 1) * linear;
  traffic.bytes -= saved;
  traffic.values += "; FP8 all-gather: the linears' Ψ_lin = " + grouped(static_cast<std::int64_t>(linear)) +
                    " gathered at 1 byte, " + (s.zero_stage == 3 ? "−2K(N−1)/N" : "−(N−1)/N") + " · (p − 1)Ψ_lin";
  return saved;
}

// ZeRO-1/2: the all-gather's part of (N−1)/N · (K'·g + p)Ψ', K' = 1 (ZeRO-1) or K (ZeRO-2), less what
// --float8-all-gather took out of it (all of it comes out of the all-gather; the reduce-scatter keeps g).
double parameter_gather_bytes(double bytes_16bit, double float8_saved, const EstimateSettings& s,
                              const ShardingRules& rules) {
  if (!rules.shards_optimizer_states() || rules.shards_parameters()) return 0;
  const StateBytes b = rules.bytes_per_parameter();
  const double reduces = (rules.shards_gradients() ? static_cast<double>(s.micro_steps()) : 1) * b.gradients;
  return bytes_16bit * b.parameters / (reduces + b.parameters) - float8_saved;
}

// How many times a step reduce-scatters each gradient: every micro-step where ZeRO shards the gradients
// (2 and 3), once at the step's end for ZeRO-1.
double gradient_reductions(const EstimateSettings& s, const ShardingRules& rules) {
  return rules.shards_gradients() ? static_cast<double>(s.micro_steps()) : 1.0;
}

// --reduce-dtype fp32 (PyTorch FSDP's MixedPrecision(reduce_dtype=torch.float32), llm-foundry's
// "DEFAULT" and torchtitan's mixed_precision_reduce "float32"): each reduce-scatter moves the gradients
// at 4 bytes a value where the traffic counted g, R(N−1)/N · (4 − g)Ψ' more.
void add_fp32_reduce(DataParallelTraffic& traffic, const EstimateSettings& s, const ShardingRules& rules) {
  const int N = rules.dp(), g = rules.bytes_per_parameter().gradients;
  if (!s.fp32_reduce || N == 1 || g >= 4) return;
  const double R = gradient_reductions(s, rules);
  traffic.bytes += R * (N - 1.0) / N * (4 - g) * static_cast<double>(traffic.travelling);
  traffic.values += "; fp32 reduce-scatter: + R(N−1)/N · (4 − g)Ψ', R = " + grouped(static_cast<std::int64_t>(R));
}

// Bytes each rank sends per step in the data-parallel collectives, by strategy
// (plan/data_parallel_traffic.h: the engine's own count, padding included),
// for the stage that sends the most. The engine's models gather their tied
// embeddings again under ZeRO-3; for other models each unit is gathered twice.
void count_data_parallel_bytes(TimeEstimate& t, const ModelShape& model, const EstimateSettings& s,
                               const ShardingRules& rules) {
  const int extra = model.engine_config ? extra_embedding_gathers(model.engine_config->kind) : 0;
  const int ep = s.expert_parallel;
  for (const StageUnits& stage : placed_stage_units(model, s)) {
    // Expert parallelism: the experts' gradients go round the ranks holding them (DDP).
    std::int64_t moe_layers = 0;
    for (int c = 0; c < stage.layers.chunks; ++c)
      moe_layers += std::max(0, stage.layers.chunk(c).end_layer -
                                    std::max(stage.layers.chunk(c).first_layer, static_cast<int>(model.dense_layers)));
    const std::int64_t experts = model.layer_expert_parameters / ep * moe_layers;
    DataParallelTraffic traffic = ep > 1
                                      ? expert_data_parallel_traffic(rules, ep, stage.parameters() - experts, experts)
                                      : data_parallel_traffic(rules, stage, s.micro_steps(), extra);
    const double bytes_16bit = traffic.bytes;
    const double saved = s.float8_all_gather ? float8_all_gather(traffic, model, s, rules, stage) : 0;
    if (ep == 1) add_fp32_reduce(traffic, s, rules);  // the gathers' share stays bytes_16bit's
    if (t.dp_formula.empty() || traffic.bytes > t.dp_bytes) {
      t.dp_bytes = traffic.bytes;
      t.dp_gather_bytes = parameter_gather_bytes(bytes_16bit, saved, s, rules);
      t.dp_formula = traffic.text();
    }
  }
}

// Pipeline: an inner stage sends each micro-batch's activation down and its gradient up,
// in fp32 with ShardScope's kernels (at every precision), in 16 bits in other mixed-precision engines.
// The bubble is GPipe's (p−1)/(m+p−1); interleaved 1F1B's (p−1)/(v·m+p−1), for
// v times the messages (Narayanan et al. 2021).
void count_pipeline_bytes(TimeEstimate& t, const ModelShape& model, const EstimateSettings& s) {
  const double h = static_cast<double>(model.hidden), seq = s.seq, K = static_cast<double>(s.micro_steps());
  const double d = s.precision == Precision::fp32 || s.activations == ActivationMode::shardscope ? 4 : 2;
  // A context-parallel rank passes on its s/cp tokens of each sequence.
  const double bsh = static_cast<double>(s.micro_batch_size) * (seq / s.layout.cp()) * h;
  if (s.layout.pp() > 1) {
    t.pp_bytes = (s.layout.pp() > 2 ? 2 : 1) * K * bsh * d;
    t.pp_formula = std::string(s.layout.pp() > 2 ? "2" : "1") + "·K·b·s·h·d: each micro-batch's activation forward" +
                   (s.layout.pp() > 2 ? " and gradient backward" : " (or gradient backward)") +
                   ", K = accum × m = " + std::to_string(s.micro_steps()) + ", d = " + short_number(d) + " bytes" +
                   (s.layout.cp() > 1 ? ", s = seq / cp (a context-parallel rank's tokens)" : "");
    t.bubble_fraction = gpipe_bubble_fraction(s.layout.pp(), s.micro_batches);
    t.bubble_formula = "(p−1)/(m+p−1) = " + std::to_string(s.layout.pp() - 1) + "/" +
                       std::to_string(s.micro_batches + s.layout.pp() - 1);
    if (s.virtual_stages > 1) {
      const int v = s.virtual_stages;
      t.pp_bytes *= v;
      t.pp_formula = std::to_string(v) + " chunks × " + t.pp_formula;
      t.bubble_fraction = interleaved_bubble_fraction(s.layout.pp(), s.micro_batches, v);
      t.bubble_formula = "(p−1)/(v·m+p−1) = " + std::to_string(s.layout.pp() - 1) + "/" +
                         std::to_string(v * s.micro_batches + s.layout.pp() - 1);
    }
    if (s.schedule == PipelineScheduleKind::zb_v) {  // two chunks in a V: each stage sends twice 1F1B's messages
      t.pp_bytes *= 2;
      t.pp_formula = "2 chunks in a V × " + t.pp_formula;
    }
    if (const SplitBackwardSchedule* split = split_backward_schedule(s.schedule)) {
      // T_F, T_B, T_W in FLOPs per token: the matmuls' 2N each (B's input gradients, W's
      // weight gradients), attention's 4·L·h·s forward and its 8·L·h·s backward all in B.
      const double N = static_cast<double>(t.matmul_parameters),
                   attention = static_cast<double>(model.layers) * model.query_width() * seq;
      const SplitBackwardBubble bubble = split_backward_bubble(*split, s.layout.pp(), s.micro_batches,
                                                               2 * N + 4 * attention, 2 * N + 8 * attention, 2 * N);
      t.bubble_fraction = bubble.fraction;
      t.bubble_formula = bubble.text;
    }
  } else {
    t.pp_formula = "0: one pipeline stage";
    t.bubble_formula = "0: one pipeline stage";
  }
}

// Tensor parallelism: the all-reduces of each layer of the first stage (which holds
// the most layers), every micro-batch of the step (plan/tensor_parallel_traffic.h).
// Values of d bytes: fp32 with ShardScope's kernels, 16-bit in other mixed-precision engines.
void count_tensor_parallel_bytes(TimeEstimate& t, const ModelShape& model, const EstimateSettings& s) {
  const int tp = s.layout.tp();
  if (tp == 1) return;
  const int d = s.precision == Precision::fp32 || s.activations == ActivationMode::shardscope ? 4 : 2;
  // A context-parallel rank's layers run on its seq / cp tokens.
  const TensorParallelTraffic layer = tensor_parallel_layer_traffic(
      tp, s.micro_batch_size, s.seq / s.layout.cp(), static_cast<int>(model.hidden), d, s.recompute == Recompute::full);
  const StageLayers first = model.stage_layers(s.layout.pp(), 0, 1, s.virtual_stages);
  const int layers = first.layer_count() * first.chunks;
  t.tp_bytes = static_cast<double>(layer.bytes) * layers * static_cast<double>(s.micro_steps());
  t.tp_formula =
      "L_s·K·" + layer.formula + " = " + std::to_string(layers) + " × " + std::to_string(s.micro_steps()) + " × " +
      grouped(layer.bytes) + " (" + layer.values + ", K = accum × m)" +
      (s.sequence_parallel ? "; sequence parallelism sends the same bytes as all-gathers and reduce-scatters" : "");
  // torchao's Float8 tp layers (float8_tensor_parallel.py at eab345c) cast before they gather: the
  // column-parallel inputs' all-gathers forward and the row-parallel outputs' gradients' all-gathers
  // backward move 1 byte a value, the reduce-scatters d: half the collectives, (1 + d)/2d of the bytes.
  if (s.float8_linears && s.sequence_parallel) {
    t.tp_bytes *= (1.0 + d) / (2.0 * d);
    t.tp_formula += "; FP8 linears: the all-gathers at 1 byte, × (1 + d)/2d";
  }
}

// Expert parallelism: each MoE layer's all-to-all, every micro-batch of the step, to each of
// the ep − 1 other ranks of the group, at the capacity's bound (plan/expert_parallel_traffic.h).
// Values of d bytes as tensor parallelism's.
void count_expert_parallel_bytes(TimeEstimate& t, const ModelShape& model, const EstimateSettings& s) {
  const int ep = s.expert_parallel;
  if (ep == 1 || model.experts == 0) return;
  const int d = s.precision == Precision::fp32 || s.activations == ActivationMode::shardscope ? 4 : 2;
  const double factor = model.engine_config ? model.engine_config->capacity_factor : 1.0;
  const auto capacity = static_cast<int>(
      std::ceil(factor * s.micro_batch_size * (s.seq / s.layout.cp()) * static_cast<double>(model.top_k) /
                static_cast<double>(model.experts)));  // a cp rank routes its s/cp tokens
  const ExpertParallelTraffic pair = expert_parallel_pair_traffic(
      ep, static_cast<int>(model.experts), capacity, static_cast<int>(model.hidden), d, s.recompute == Recompute::full);
  const StageLayers first = model.stage_layers(s.layout.pp(), 0, 1, s.virtual_stages);
  int layers = 0;  // the first stage's MoE layers (DeepSeek-V3's first dense ones have no all-to-all)
  for (int c = 0; c < first.chunks; ++c)
    layers += std::max(
        0, first.chunk(c).end_layer - std::max(first.chunk(c).first_layer, static_cast<int>(model.dense_layers)));
  t.ep_bytes = static_cast<double>(pair.pair_bytes) * (ep - 1) * layers * static_cast<double>(s.micro_steps());
  t.ep_formula = "(ep − 1)·L·K·" + pair.formula + " = " + std::to_string(ep - 1) + " × " + std::to_string(layers) +
                 " × " + std::to_string(s.micro_steps()) + " × " + grouped(pair.pair_bytes) + " (" + pair.values +
                 ", K = accum × m; the capacity's bound c = ceil(f·b·s·k/E), f = " + short_number(factor) +
                 ": routing uniform over the experts, each taking its capacity from every rank)";
}

// Context parallelism: ring attention's key/value traffic per layer of the largest stage, every
// micro-batch (time_model.h's formula). PyTorch's ring (torch.distributed.tensor.experimental._attention,
// torchtitan's default rotate method "allgather") all-gathers a layer's K, V once in forward and once in
// backward, and passes the dK, dV accumulators round the ring in fp32 (convert_to_f32), one block a step.
// d: the activations' bytes; h/t: every query head's keys and values (torchtitan's Llama repeats the
// grouped K, V before attention; the engine's models have as many).
struct RingBytes {
  double block = 0;            // B = 2·b·(s/cp)·(a·d_h)/t · d: every query head's K and V
  double gradient_block = 0;   // B·4/d
  double layer_forwards = 0;   // forward rings a step: layers × K, twice under recompute
  double layer_backwards = 0;  // backward rings a step: layers × K
};

RingBytes ring_bytes(const ModelShape& model, const EstimateSettings& s) {
  const int cp = s.layout.cp();
  const double d = s.precision == Precision::fp32 || s.activations == ActivationMode::shardscope ? 4 : 2;
  RingBytes r;
  // K and V as wide as the queries (a·d_h): torchtitan's Llama repeats its grouped K, V before attention.
  r.block = 2.0 * s.micro_batch_size * (s.seq / cp) * (static_cast<double>(model.query_width()) / s.layout.tp()) * d;
  r.gradient_block = r.block * 4 / d;
  const double layers = static_cast<double>(model.layers) / s.layout.pp(), K = static_cast<double>(s.micro_steps());
  const bool again =
      s.recompute == Recompute::full || (s.recompute == Recompute::selective && !s.selective_every_second_matmul);
  r.layer_forwards = layers * K * (again ? 2 : 1);
  r.layer_backwards = layers * K;
  return r;
}

void count_context_parallel_bytes(TimeEstimate& t, const ModelShape& model, const EstimateSettings& s) {
  const int cp = s.layout.cp();
  if (cp == 1) return;
  const RingBytes r = ring_bytes(model, s);
  t.cp_bytes = (r.layer_forwards + r.layer_backwards) * (cp - 1) * r.block + r.layer_backwards * cp * r.gradient_block;
  t.cp_formula =
      "L·K·(cp − 1)·B forward" + std::string(r.layer_forwards > r.layer_backwards ? " (twice: recompute)" : "") +
      " + L·K·((cp − 1)·B + cp·B·4/d) backward, B = 2·b·(s/cp)·a·d_h/t·d = " +
      grouped(static_cast<std::int64_t>(r.block)) + " (K, V all-gathered, dK, dV passed round in fp32; L = " +
      short_number(static_cast<double>(model.layers) / s.layout.pp()) + ", K = " + std::to_string(s.micro_steps()) +
      ")";
}

// Compute seconds per rank: kernel by kernel on the measured kernel model (estimate/step_kernels.h),
// or (--efficiency X) every FLOP at X of peak. `efficiency` is then what the step's FLOPs reach.
void time_compute(TimeEstimate& t, const ModelShape& model, const EstimateSettings& s, const GpuProfile& gpu,
                  StepKernels& blocks) {
  t.peak_tflops = gpu.peak_tflops(s.precision);
  if (!s.measured_kernels) {
    t.efficiency = s.efficiency;
    t.compute_s = t.flops_per_step / s.world_size() / (t.peak_tflops * 1e12 * s.efficiency);
    return;
  }
  // The GEMMs' FLOP rate at the clock a training step sustains; the bandwidth does not move.
  t.sustained_clock = sustained_clock(gpu.name).fraction;
  const KernelModel kernels = sustained_kernel_model(gpu.name, t.peak_tflops, gpu.memory_gbps);
  // The fused attention kernel at its own measured rate (clock/attention_kernel.h), in 16 bits only.
  const AttentionKernelRate attention = flash_attention_rate(gpu.name);
  t.attention_fraction =
      s.flash_attention && s.precision != Precision::fp32 && attention.fraction > 0 ? attention.fraction : 0;
  // --float8: the layers' linears at the GPU's FP8 peak, DeepGEMM's fraction, the same sustained clock.
  KernelModel float8{};
  if (s.float8_linears) {
    if (gpu.fp8_tflops <= 0)
      throw ConfigError("--float8 tensorwise: the " + gpu.name + " (" + gpu.description +
                        ") has no FP8 tensor cores; FP8 linears need a GPU with them (H100, H100-PCIe, H200, B200, "
                        "RTX4090, MI300X)");
    float8 = sustained_float8_kernel_model(gpu.name, gpu.fp8_tflops, gpu.memory_gbps);
    t.float8_peak_tflops = gpu.fp8_tflops;
    t.float8_gemm_fraction = float8.gemm_fraction;
  }
  const StepKernels k = step_kernels(model, s, kernels, t.attention_fraction, s.float8_linears ? &float8 : nullptr);
  blocks = k;
  t.float8_cast_s = k.float8_cast_s;
  t.ring_passes_s = k.ring_passes_s;
  t.measured_kernels = true;
  t.gemm_s = k.gemm_s;
  t.attention_s = k.attention_s;
  t.memory_bound_s = k.memory_s;
  t.gemm_kernels = k.gemm_kernels;
  t.gemm_fraction = kernels.gemm_fraction;
  t.memory_fraction = kernels.memory_fraction;
  t.gemm_floor_s = kernels.gemm_floor_s;
  t.compute_s = k.total();
  t.efficiency = t.flops_per_step / s.world_size() / (t.compute_s * t.peak_tflops * 1e12);
}

// ZeRO-1/2's all-gather of the updated shards: after the step, exposed, or (--overlap-param-gather,
// Megatron-LM's distributed optimizer) bucket by bucket ahead of the layer that reads it, behind the
// next step's first forward; one bucket, a layer's, still shows
// (NeMo's communication-overlap guide: "exposes only one DP communication chunk"). The GEMMs beside
// it pay the measured contention (clock/overlap_contention.h). The forward's share of a micro-step is its
// FLOPs' share, (2N + 4·L·h·s) of what runs: a third without recompute, a quarter under full recompute
// (which runs the forward again in backward), between the two under selective.
double exposed_parameter_gather_s(TimeEstimate& t, const EstimateSettings& s, double gather_s, double layers) {
  if (!s.overlap_param_gather) return gather_s;
  const double forward_share = t.model_flops_per_token / 3 / t.flops_per_token;
  const double first_forward_s = t.compute_s / static_cast<double>(s.micro_steps()) * forward_share;
  const HiddenCollective h = hide_collective(gather_s, first_forward_s, gather_s / layers);
  t.overlap_contention_s += h.contention_s;
  return h.exposed_s;
}

// --tp-comm-overlap (kernel model): Transformer Engine's userbuffers split each all-gather and
// reduce-scatter of sequence parallelism into chunks that move while the GEMM beside it computes the
// chunks already there (NVIDIA's NeMo guide, "Tensor-parallel Communication Overlap"), so the step's
// GEMMs hide the tp traffic, at the measured contention; what they cannot cover stays exposed.
void overlap_tensor_parallel(TimeEstimate& t, const EstimateSettings& s) {
  t.tp_exposed_s = t.tp_comm_s;
  if (!s.tp_comm_overlap || !s.measured_kernels) return;
  const HiddenCollective h = hide_collective(t.tp_comm_s, t.gemm_s);
  t.tp_exposed_s = h.exposed_s;
  t.overlap_contention_s += h.contention_s;
}

// --async-tp (kernel model): torchtitan's AsyncTP, each collective fused with its own matmuls by
// PyTorch Inductor (estimate/step_kernels.cpp, async_tp_ops, where the source is cited). Its t − 1
// chunk copies run beside t − 1 of its t chunk GEMMs, which pay the measured contention while they
// do (clock/overlap_contention.h); what they cannot cover shows, and so does every collective the
// pass leaves plain. The ops' bytes are one layer's on one micro-batch; tp_bytes counts them over
// the step's layers and micro-batches, at the link's seconds per byte.
void overlap_async_tensor_parallel(TimeEstimate& t, const EstimateSettings& s, const StepKernels& k) {
  if (!s.async_tp || !s.measured_kernels || k.tp_ops.empty() || t.tp_bytes <= 0) return;
  const double t_ranks = s.layout.tp(), seconds_per_byte = t.tp_comm_s / t.tp_bytes;
  double layer_bytes = 0, exposed_s = 0, contention_s = 0;
  for (const TensorParallelOp& op : k.tp_ops) {
    const double runs = op.forward ? k.tp_forward_runs : 1, comm_s = op.bytes * seconds_per_byte;
    layer_bytes += runs * op.bytes;
    const HiddenCollective h =
        op.fused ? hide_collective(comm_s, op.chunked_gemm_s * (t_ranks - 1) / t_ranks) : HiddenCollective{comm_s, 0};
    exposed_s += runs * h.exposed_s;
    contention_s += runs * h.contention_s;
  }
  const double layer_micro_batches = t.tp_bytes / layer_bytes;
  t.tp_exposed_s = layer_micro_batches * exposed_s;
  t.overlap_contention_s += layer_micro_batches * contention_s;
}

// Kernel model: the data-parallel seconds compute does not hide. DDP reduces each bucket of
// gradients as soon as the last micro-step's backward has made it (Li et al. 2020, PyTorch DDP,
// VLDB; earlier micro-steps accumulate without communicating), so that backward (2/3 of its
// compute) hides all but the last bucket; ZeRO-1 and ZeRO-2 reduce-scatter the same way (ZeRO-2
// every micro-step, behind each one's backward), but the all-gather of the updated shards waits
// for the optimizer step and the next forward waits for it: exposed. ZeRO-3 gathers each layer's
// parameters while the layer before it computes, in forward and backward, and reduce-scatters its
// gradients while the next one computes (Zhao et al. 2023, PyTorch FSDP, VLDB), so all of compute
// hides all but the first gather and the last reduce-scatter. One layer of the largest stage
// stands for a bucket or a unit. Naive DataParallel overlaps nothing.
double exposed_data_parallel_s(TimeEstimate& t, const ModelShape& model, const EstimateSettings& s,
                               const ShardingRules& rules) {
  if (rules.naive()) return t.dp_comm_s;
  const double layers = std::max(1.0, static_cast<double>(model.layers) / s.layout.pp());
  const auto overlapped = [layers](double comm_s, double hidden_by) {
    return std::max(comm_s / layers, comm_s - hidden_by);
  };
  if (rules.shards_parameters()) return overlapped(t.dp_comm_s, t.compute_s);
  const double K = static_cast<double>(s.micro_steps()), backward = t.compute_s * 2 / 3;
  if (!rules.shards_optimizer_states()) return overlapped(t.dp_comm_s, backward / K);
  // ZeRO-1/2: the all-gather's bytes (parameter_gather_bytes) after the step, the reduce-scatters' behind backward.
  const double gather_s = t.dp_bytes > 0 ? t.dp_comm_s * t.dp_gather_bytes / t.dp_bytes : 0;
  return exposed_parameter_gather_s(t, s, gather_s, layers) +
         overlapped(t.dp_comm_s - gather_s, rules.shards_gradients() ? backward : backward / K);
}

// Kernel model: ring attention's seconds the attention blocks do not hide. Forward, the all-gather of
// the K, V blocks moves beside the first block's kernel (the rank's own K, V) and the second waits for
// it; backward, the same all-gather beside the first block's backward, then each dK, dV accumulator
// beside the next block's backward, the last after them: exposed. The kernels beside a transfer pay
// the measured contention (clock/overlap_contention.h).
void overlap_context_parallel(TimeEstimate& t, const EstimateSettings& s, const StepKernels& k, const RingBytes& r,
                              double gbps) {
  const int cp = s.layout.cp();
  const double gather_s = (cp - 1) * r.block / (gbps * 1e9), gradient_s = r.gradient_block / (gbps * 1e9);
  const HiddenCollective forward = hide_collective(gather_s, k.attention_block_forward_s);
  const HiddenCollective backward = hide_collective(gather_s, k.attention_block_backward_s);
  const HiddenCollective passed = hide_collective(gradient_s, k.attention_block_backward_s);
  t.cp_exposed_s = r.layer_forwards * forward.exposed_s +
                   r.layer_backwards * (backward.exposed_s + (cp - 1) * passed.exposed_s + gradient_s);
  t.overlap_contention_s += r.layer_forwards * forward.contention_s +
                            r.layer_backwards * (backward.contention_s + (cp - 1) * passed.contention_s);
}

// Kernel model: the memory-bound passes over the weights that a framework adds around the kernels of
// estimate/step_kernels.h, per micro-step, over the stage's P parameters.
void add_weight_passes(TimeEstimate& t, const EstimateSettings& s, const GpuProfile& gpu, const ShardingRules& rules,
                       double P) {
  if (!s.measured_kernels) return;
  const double K = static_cast<double>(s.micro_steps());
  double bytes = 0;
  // ZeRO-3 copies each gathered unit out of the all-gather's buffer into the parameters, in forward
  // and again in backward, and each gradient into the reduce-scatter's buffer (FSDP2's copy-out and
  // chunk_cat): read and write, 2(2p + g) bytes per parameter.
  const StateBytes b = rules.bytes_per_parameter();
  if (rules.shards_parameters()) bytes += K * P * 2 * (2 * b.parameters + b.gradients);
  // PyTorch AMP (--autocast): each forward casts the fp32 weights to 16 bits (4 read, 2 written),
  // backward casts their 16-bit gradients back (2 read, 4 written) and, after the first
  // micro-step, adds them into the fp32 gradients (4 + 4 read, 4 written).
  if (s.autocast && s.precision != Precision::fp32) bytes += P * (12 * K + 12 * (K - 1));
  // --reduce-dtype fp32: before each reduce-scatter the gradients are cast to fp32 (FSDP's
  // `unsharded_grad.to(reduce_dtype)`): g bytes read, 4 written per value.
  if (s.fp32_reduce && b.gradients < 4 && rules.dp() > 1)
    bytes += gradient_reductions(s, rules) * P * (b.gradients + 4);
  if (bytes == 0) return;
  const double seconds = measured_kernel_model(t.peak_tflops, gpu.memory_gbps).memory_s(bytes);
  t.memory_bound_s += seconds;
  t.compute_s += seconds;
  t.efficiency = t.flops_per_step / s.world_size() / (t.compute_s * t.peak_tflops * 1e12);
}

// A collective inside a node: under the kernel model at the bus bandwidth nccl-tests measures for its
// kind (clock/sustained_clock.h: NVLink SHARP speeds up the all-reduce only), where published; else
// the datasheet's link.
struct CollectiveLink {
  double gbps = 0;
  std::string text;
};
CollectiveLink node_collective(const GpuProfile& gpu, const EstimateSettings& s, bool all_reduce) {
  const NodeBusBandwidth measured = s.measured_kernels ? measured_node_bus_gbps(gpu.name) : NodeBusBandwidth{};
  const double gbps = all_reduce ? measured.all_reduce : measured.other;
  if (gbps <= 0) return {gpu.link_gbps, gpu.link};
  return {gbps, gpu.link + ", collectives at " + short_number(gbps) + " GB/s measured by nccl-tests"};
}

// Seconds per step on the GPU: compute, the bubble, AdamW's memory-bound update,
// and the bytes above over the node's link (or the inter-node network when a group spans nodes).
void time_on_gpu(TimeEstimate& t, const ModelShape& model, const EstimateSettings& s, const GpuProfile& gpu,
                 const ShardingRules& rules, std::int64_t psi_s) {
  const double P = static_cast<double>(psi_s), Nd = data_parallel_ranks(s);
  t.has_gpu = true;
  t.gpu = gpu.name;
  StepKernels kernels;
  time_compute(t, model, s, gpu, kernels);
  add_weight_passes(t, s, gpu, rules, P);
  t.bubble_s = t.bubble_fraction < 1 ? t.compute_s * t.bubble_fraction / (1 - t.bubble_fraction) : 0;
  // AdamW reads parameter, gradient, m, v and writes parameter, m, v: 28 bytes per
  // parameter in fp32, and also 28 in mixed precision (4 master + 2 grad + 8 read, 12 + 2 written).
  double updated = rules.shards_optimizer_states() ? P / Nd : P;
  if (s.offload_optimizer) updated = 0;  // the CPU runs the step (not modeled)
  // Eager PyTorch's AdamW (foreach, not fused) runs it as eight passes: decay 8, lerp of m 12, v's
  // scale 8 and addcmul 12, sqrt 8, divide 8, add eps 8, addcdiv into the parameter 16 = 80 bytes.
  const double adam_bytes = s.eager_runtime ? 80 : 28;
  t.optimizer_s = s.measured_kernels
                      ? measured_kernel_model(t.peak_tflops, gpu.memory_gbps).memory_s(adam_bytes * updated)
                      : 28 * updated / (gpu.memory_gbps * 1e9);
  // A dp × cp group's ranks lie tp apart (tp innermost, then cp, then dp), so it spans dp × cp × tp GPUs.
  const bool dp_in_node = static_cast<std::int64_t>(data_parallel_ranks(s)) * s.layout.tp() <= s.gpus_per_node;
  const bool pp_in_node = s.world_size() <= s.gpus_per_node, tp_in_node = s.layout.tp() <= s.gpus_per_node;
  // DDP all-reduces; ZeRO reduce-scatters and all-gathers, as sequence parallelism does.
  const CollectiveLink dp_node = node_collective(gpu, s, !rules.shards_optimizer_states() && !rules.naive());
  const CollectiveLink tp_node = node_collective(gpu, s, !s.sequence_parallel);
  const CollectiveLink ep_node = node_collective(gpu, s, false);  // all-to-all
  const double dp_bw = dp_in_node ? dp_node.gbps : gpu.internode_gbps;
  const double pp_bw = pp_in_node ? gpu.link_gbps : gpu.internode_gbps;
  t.dp_link = dp_in_node ? dp_node.text : gpu.internode;
  t.pp_link = pp_in_node ? gpu.link : gpu.internode;
  t.dp_comm_s = t.dp_bytes / (dp_bw * 1e9);
  t.pp_comm_s = t.pp_bytes / (pp_bw * 1e9);
  t.tp_link = tp_in_node ? tp_node.text : gpu.internode;
  t.tp_comm_s = t.tp_bytes / ((tp_in_node ? tp_node.gbps : gpu.internode_gbps) * 1e9);
  // An ep group is ep consecutive dp ranks, tp apart: ep × tp GPUs.
  const bool ep_in_node = static_cast<std::int64_t>(s.expert_parallel) * s.layout.tp() <= s.gpus_per_node;
  t.ep_link = ep_in_node ? ep_node.text : gpu.internode;
  t.ep_comm_s = t.ep_bytes / ((ep_in_node ? ep_node.gbps : gpu.internode_gbps) * 1e9);
  // The tp collectives sit between a layer's matmuls, the all-to-alls between the router and the
  // experts: on the critical path, overlapped with nothing but under --tp-comm-overlap.
  overlap_tensor_parallel(t, s);
  overlap_async_tensor_parallel(t, s, kernels);
  // A cp group spans cp × tp GPUs; its all-gathers and the dK, dV passes at the all-gather's bus bandwidth.
  if (s.layout.cp() > 1) {
    const bool cp_in_node = static_cast<std::int64_t>(s.layout.cp()) * s.layout.tp() <= s.gpus_per_node;
    const CollectiveLink cp_node = node_collective(gpu, s, false);
    const double cp_bw = cp_in_node ? cp_node.gbps : gpu.internode_gbps;
    t.cp_link = cp_in_node ? cp_node.text : gpu.internode;
    t.cp_comm_s = t.cp_bytes / (cp_bw * 1e9);
    t.cp_exposed_s = t.cp_comm_s;
    if (s.measured_kernels) overlap_context_parallel(t, s, kernels, ring_bytes(model, s), cp_bw);
  }
  t.dp_exposed_s = s.measured_kernels ? exposed_data_parallel_s(t, model, s, rules) : t.dp_comm_s;
  const double critical = t.compute_s + t.tp_exposed_s + t.ep_comm_s + t.cp_exposed_s + t.overlap_contention_s;
  t.step_s = critical + t.bubble_s + t.optimizer_s + t.dp_exposed_s + t.pp_comm_s;
  t.step_overlapped_s = std::max(critical + t.bubble_s, t.dp_comm_s) + t.optimizer_s + t.pp_comm_s;
  t.tokens_per_s = static_cast<double>(t.tokens_per_step) / t.step_s;
  const double gpus = s.world_size();
  t.tokens_per_s_per_gpu = t.tokens_per_s / gpus;
  t.tflops_per_gpu = t.flops_per_step / gpus / t.step_s / 1e12;
  t.mfu = t.model_flops_per_token * t.tokens_per_s_per_gpu / (t.peak_tflops * 1e12);
}

}  // namespace

TimeEstimate estimate_time(const ModelShape& model, const EstimateSettings& in, const GpuProfile* gpu) {
  EstimateSettings s = in;
  if (s.seq == 0) s.seq = static_cast<int>(model.max_positions);
  TimeEstimate t;
  count_flops(t, model, s);
  const ShardingRules rules(gradient_layout(s));
  const std::int64_t psi_s = largest_stage_parameters(model, s);
  count_data_parallel_bytes(t, model, s, rules);
  count_pipeline_bytes(t, model, s);
  count_tensor_parallel_bytes(t, model, s);
  count_expert_parallel_bytes(t, model, s);
  count_context_parallel_bytes(t, model, s);
  if (gpu == nullptr) return t;
  GpuProfile run_gpu = *gpu;  // --gpu-bandwidth: the run's own memory where it differs from the data sheet
  if (s.memory_gbps > 0) run_gpu.memory_gbps = s.memory_gbps;
  if (s.network_gbps > 0) {  // --network-bandwidth: the run's own network between nodes
    run_gpu.internode_gbps = s.network_gbps;
    run_gpu.internode = "network " + short_number(s.network_gbps, 4) + " GB/s per GPU (--network-bandwidth)";
  }
  t.memory_gbps = run_gpu.memory_gbps;
  time_on_gpu(t, model, s, run_gpu, rules, psi_s);
  return t;
}

}  // namespace shardscope
