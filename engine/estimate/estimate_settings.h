// SPDX-License-Identifier: GPL-3.0-or-later
// What the estimator is asked about: the parallel layout, precision, batch
// shape and recompute policy of a training run. The CLI, the importers
// (DeepSpeed JSON, accelerate YAML) and later the GUI's config panel fill it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/run_config.h"
#include "core/checked_math.h"
#include "plan/pipeline_schedule.h"
#include "plan/sharding_plan.h"

namespace shardscope {

struct SchemaValue;  // config/run_schema.h

// Precision (train/run_config.h): fp32, or mixed precision as in the ZeRO
// paper: 16-bit parameters and gradients, fp32 master weights and Adam
// moments in the optimizer states.

// Activation recompute (Korthikanti et al. 2022): none keeps everything,
// selective recomputes the attention core, full keeps only each layer's input.
enum class Recompute { none, selective, full };
std::string_view recompute_name(Recompute recompute);
Recompute parse_recompute(std::string_view text, std::string_view field);

// How activation bytes are computed: exactly as ShardScope's own kernels lay
// them out (engine/model/activations.h), or by the standard per-layer formula
// sbh(34 + 5as/h) for other implementations (Megatron, HF Transformers).
enum class ActivationMode { shardscope, formula };
std::string_view activation_mode_name(ActivationMode mode);
ActivationMode parse_activation_mode(std::string_view text, std::string_view field);

struct EstimateSettings {
  Layout layout;       // dp (Nd: data-parallel ranks) and pp (pipeline stages): layout/parallel_axes.h
  int zero_stage = 0;  // 0-3 (ZeRO paper: P_os, P_os+g, P_os+g+p)
  DataParallelMode dp_mode = DataParallelMode::ddp;
  Precision precision = Precision::fp32;
  int micro_batch_size = 1;  // b: sequences per rank per micro-step
  int seq = 0;            // s: tokens per sequence; 0 = the model's maximum
  int accum = 1;          // gradient accumulation steps per optimizer step
  int micro_batches = 1;  // m: pipeline micro-batches per accumulation step (RunConfig::micro_batches)
  Recompute recompute = Recompute::none;
  // Sequence parallelism (Korthikanti et al. 2022) over the tp group: the regions
  // outside the split matmuls (LayerNorm, dropout) hold s/t tokens per rank.
  bool sequence_parallel = false;
  // Expert parallelism (RunConfig::expert_parallel): ep consecutive dp ranks split
  // a mixture of experts' experts, E/ep each, and exchange tokens by all-to-all.
  int expert_parallel = 1;
  PipelineScheduleKind schedule = PipelineScheduleKind::one_f_one_b;
  int virtual_stages = 1;          // v: model chunks per stage (interleaved 1F1B), RunConfig::virtual_stages
  bool offload_optimizer = false;  // ZeRO-Offload: optimizer states (and the step) on the CPU
  bool offload_params = false;     // ZeRO-3 parameter offload (ZeRO-Infinity)
  ActivationMode activations = ActivationMode::shardscope;
  // The run's ranks compute on the CUDA backend (RunConfig::device "cuda"),
  // whose fp16/bf16 attention is fused and keeps rows, not T x T probabilities
  // (ops/backend.h cuda_attention_kernel). False: the CPU backend.
  bool cuda = false;
  int gpus_per_node = 8;    // for DeepSpeed's estimator and the inter-node link
  double efficiency = 0.5;  // flat time model: fraction of peak FLOP/s a step sustains (assumed)
  // Time model (the default; --time-model kernels): each kernel from the measured constants of
  // clock/kernel_model.h, at the GPU's sustained clock, with the data-parallel traffic
  // overlapped as each strategy overlaps it. False (--time-model flat, or --efficiency X
  // alone): every FLOP at `efficiency` of peak, the simple model.
  bool measured_kernels = true;
  // Time model: the attention core as one fused kernel that keeps the s × s scores on chip
  // (FlashAttention), or (false) materialized as the activation formula counts them.
  bool flash_attention = false;
  // With flash_attention: the fused kernel written in Triton (--attention triton), the same memory and
  // FLOPs at FlashAttention-2's seconds times the ratios its paper measured (clock/attention_kernel.h).
  bool triton_attention = false;
  // --reduce-dtype fp32 (ZeRO-1/2/3): the gradients cast to fp32 before each reduce-scatter, as PyTorch
  // FSDP's MixedPrecision(reduce_dtype=torch.float32) runs them; false: reduced in their own precision.
  bool fp32_reduce = false;
  // Kernel model, the run's framework as its published configuration states it
  // (estimate/step_kernels.h): eager PyTorch runs each elementwise op as its own kernel
  // (--runtime eager: RMSNorm composed of fp32 passes, SwiGLU's SiLU and product apart, RoPE
  // through fp32 complex views, grouped-query k and v copied per head, the loss in fp32), fused
  // (llm.c, Megatron-LM's fused kernels, torch.compile) one pass per norm, activation and add.
  bool eager_runtime = false;
  // --selective-ac op: torchtitan's op policy under --checkpoint selective (every second matmul of a
  // layer recomputed with the layer's memory-bound ops, the attention kernel's output kept)
  // instead of the attention core recomputed (Korthikanti et al. 2022).
  bool selective_every_second_matmul = false;
  double dropout = 0;      // --dropout P (kernel model): each dropout's mask pass, P > 0
  // --autocast (kernel model): PyTorch AMP's fp32 weights, cast to 16 bits in every forward, their
  // 16-bit gradients cast back and accumulated in fp32 (what Lightning's precision "bf16" runs).
  bool autocast = false;
  // --tp-comm-overlap (kernel model): Transformer Engine's userbuffers hide sequence parallelism's
  // all-gathers and reduce-scatters behind the GEMMs beside them, inside one node (Megatron-LM's flag).
  bool tp_comm_overlap = false;
  // --async-tp (kernel model): torchtitan's AsyncTP, PyTorch Inductor's micro-pipelined tensor
  // parallelism (torch/_inductor/fx_passes/micro_pipeline_tp.py): each all-gather fused with the
  // matmuls that read it, each reduce-scatter with the matmul that makes it, in tp chunks.
  bool async_tp = false;
  // --overlap-param-gather (kernel model): the distributed optimizer's all-gather of the updated
  // parameters hidden behind the next step's first forward (Megatron-LM's flag; ZeRO-1/2 here).
  bool overlap_param_gather = false;
  double memory_gbps = 0;  // --gpu-bandwidth: the run's own memory bandwidth, GB/s (0: the profile's)
  // --network-bandwidth: the run's own network between nodes, GB/s per GPU and direction (0: the profile's)
  double network_gbps = 0;
  // --float8 tensorwise (kernel model): torchao's Float8Linear as torchtitan runs it, every linear of the
  // layers (not the head) in FP8 with one dynamic scale per tensor: its three GEMMs at the GPU's FP8 peak,
  // its casts (amax, scale-and-cast, the transposes backward) as memory-bound passes
  // (estimate/step_kernels.h). The attention core and the head stay 16-bit.
  bool float8_linears = false;
  // --float8-all-gather (with --float8 and ZeRO 1-3): FSDP gathers those linears' weights in FP8, one byte
  // each (torchtitan's enable_fsdp_float8_all_gather with precompute_float8_dynamic_scale_for_fsdp). ZeRO-3
  // gathers in every micro-step's forward and backward; ZeRO-1/2 once a step, as torchtitan's FSDP does
  // under pipeline parallelism (it keeps the gathered parameters through the step).
  bool float8_all_gather = false;

  int world_size() const { return layout.world_size(); }
  // What the sharding plan needs (plan/sharding_plan.h).
  ParallelLayout plan_layout() const { return ParallelLayout{layout, zero_stage, dp_mode, precision}; }
  // Sequences per optimizer step, as RunConfig::batch: micro-batch x dp x accum x m.
  // Checked (core/checked_math.h): the four limits multiplied pass 2^63.
  std::int64_t global_batch() const {
    return (CheckedSize(micro_batch_size) * layout.dp() * accum * micro_batches).value();
  }
  // Micro-batches each rank runs forward and backward per optimizer step.
  std::int64_t micro_steps() const { return static_cast<std::int64_t>(accum) * micro_batches; }
};

// The settings of a run the engine would train (the GUI's "predicted" bars):
// its values of the schema's rows on the estimate surface (layout, ZeRO,
// precision, micro-batches, sequence, accumulation, schedule, checkpointing,
// device) and its micro-batch per rank, set as any source's are (patch_value).
EstimateSettings settings_for_run(const RunConfig& config);

// Part of a settings record, as one source (a file, the command line) gives
// it. Later sources override earlier ones; `origin` says who set what, by the
// run-config schema's keys, e.g. {"zero", "ds.json: zero_optimization.stage"}.
struct SettingsPatch {
  PerAxis<std::optional<int>> axes;  // dp, pp, tp
  std::optional<int> zero_stage, micro_batch_size, seq, accum, micro_batches, gpus_per_node, virtual_stages;
  std::optional<int> expert_parallel;
  std::optional<std::int64_t> global_batch;  // DeepSpeed's train_batch_size
  std::optional<DataParallelMode> dp_mode;
  std::optional<Precision> precision;
  std::optional<Recompute> recompute;
  std::optional<PipelineScheduleKind> schedule;
  std::optional<bool> offload_optimizer, offload_params, sequence_parallel;
  std::optional<ActivationMode> activations;
  std::optional<bool> cuda;
  std::optional<double> efficiency;
  std::optional<bool> flash_attention, triton_attention;  // attention: "flash" or "triton", "triton"
  std::optional<bool> fp32_reduce;                        // reduce_dtype: "fp32"
  std::optional<bool> eager_runtime, selective_every_second_matmul, autocast;  // runtime, selective_ac, autocast
  std::optional<double> dropout, memory_gbps, network_gbps;  // dropout, gpu_bandwidth, network_bandwidth
  std::optional<bool> tp_comm_overlap, async_tp, overlap_param_gather;
  std::optional<bool> float8_linears, float8_all_gather;    // float8, float8_all_gather
  std::optional<bool> measured_kernels;                     // time_model: "kernels"
  std::vector<std::pair<std::string, std::string>> origin;  // (setting, where it came from)
};

// Sets the patch's setting of a schema row (config/run_schema.h) from the row's
// JSON value, checked already. False when the row is not a setting (the model,
// the GPU profile, the GPU memory: the request's, not the settings').
bool patch_value(SettingsPatch& patch, std::string_view key, const nlohmann::json& value);
// One source's values as a patch, each credited to its `from` (a logic_error
// for a row the estimator does not take). The estimator's names of two rows:
// checkpoint is "recompute", batch is "global_batch" (DeepSpeed's train_batch_size).
SettingsPatch patch_from_values(const std::vector<SchemaValue>& values);

// Applies the patches in order over `base`, then derives what DeepSpeed
// derives: with a global batch (train_batch_size) and one of micro_batch /
// accum missing, the other follows from global = micro x accum x m x dp. Throws
// ConfigError naming the settings when they disagree or a value is out of range.
EstimateSettings resolve_settings(EstimateSettings base, const std::vector<SettingsPatch>& patches,
                                  std::vector<std::string>* notes = nullptr);

// Throws FieldError (config/run_schema.h) at the first bad value or broken
// rule, naming fields by key: dp, pp, zero, micro_batch, ... The layout rules
// are the run's own (check_layout_rules); the ranges are a planner's.
void validate_estimate_settings(const EstimateSettings& settings);
// How a message names a field: as the last source that set it among `patches`
// ("ds.json: zero_optimization.stage", "--zero"), else by its flag.
std::string estimate_field_name(std::string_view key, const std::vector<SettingsPatch>& patches);

}  // namespace shardscope
