// SPDX-License-Identifier: GPL-3.0-or-later
// Everything that defines a training run, in one struct: the CLI fills it from
// flags, the GUI from its panel, and both go through the same validation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clock/clock_choices.h"
#include "config/run_choices.h"
#include "layout/parallel_axes.h"
#include "model/model_config.h"

namespace shardscope {

struct RunConfig {
  std::string model = "gpt-tiny";  // preset name
  std::string init_from;           // Hugging Face model directory (io/hf_model.h): its shape and weights; overrides model
  std::int64_t steps = 200;        // optimizer steps
  int batch = 16;                  // sequences per optimizer step (the global batch)
  int seq = 64;                    // tokens per sequence (T)
  float lr = 1e-3f;                // peak learning rate
  float min_lr_ratio = 0.1f;       // cosine decay ends at lr * min_lr_ratio
  std::int64_t warmup = -1;        // warm-up steps; -1: min(100, steps / 10)
  float weight_decay = 0.1f;
  float adam_beta2 = 0.95f;        // AdamW's second-moment decay (GPT-2/3 0.95; torch's default 0.999)
  float grad_clip = 1.0f;          // max global gradient norm; 0 disables clipping
  std::uint64_t seed = 1337;
  std::string data;                // text file; empty: the shipped default corpus
  std::int64_t eval_every = 0;     // evaluate every N steps (and at the end); 0: never
  int eval_batches = 4;            // validation batches per evaluation
  int threads = 0;                 // CPU threads; 0: all cores
  std::string metrics_out;         // JSONL file, one object per step; empty: none
  // Checkpoints (train/checkpoint.h): saved under save_dir every save_every
  // steps (0: only at the end); the run resumes from resume_dir (a step
  // directory, or a save_dir root: its newest). Empty: none.
  std::string save_dir;
  std::int64_t save_every = 0;
  std::string resume_dir;

  // Parallelism. --batch is the global batch of one optimizer step: it is split
  // over dp ranks, accum steps and pipeline micro-batches, micro_batch_size()
  // sequences each (as DeepSpeed's train_batch_size).
  int ranks = 0;                   // world size if given (must equal dp x pp); 0: dp x pp
  Layout layout;                   // the size of every parallel axis: dp ranks, pp stages (layout/parallel_axes.h)
  int micro_batches = 1;           // pipeline micro-batches per accumulation step (m)
  PipelineScheduleKind schedule = PipelineScheduleKind::one_f_one_b;
  int virtual_stages = 1;  // model chunks per pipeline stage (interleaved 1F1B's v); 1 for the others
  std::string schedule_file;  // a pipeline schedule written by hand (plan/schedule_file.h) in place of `schedule`
  DataParallelMode dp_mode = DataParallelMode::ddp;
  int zero_stage = 0;              // 0: replicated; 1: optimizer states sharded; 2: + gradients; 3: + parameters
  int accum = 1;                   // gradient accumulation micro-steps per optimizer step
  bool checkpoint = false;         // per-layer activation checkpointing
  // Sequence parallelism (Korthikanti et al. 2022) over the tp group: the LayerNorm regions hold
  // seq / tp tokens of every sequence per rank (model/sequence_parallel.cpp). Needs tp > 1.
  bool sequence_parallel = false;
  // Context parallelism (layout.cp() > 1): how each sequence's tokens split over
  // the cp ranks: "zigzag" (chunks i and 2 cp - 1 - i) or "contiguous".
  std::string cp_split = "zigzag";
  // Expert parallelism (mixture-of-experts models): the experts split over groups of ep
  // consecutive dp ranks, tokens sent to their experts' ranks by all-to-all (parallel/expert_parallel.h).
  int expert_parallel = 1;
  // DDP gradient bucket size in MiB (2^20 bytes, as PyTorch's bucket_cap_mb; parallel/ddp.h
  // bucket_cap_bytes). PyTorch's bucket_cap_mb is 25, one bucket for
  // the whole of gpt-tiny's 3.3 MiB of gradients (0.4-0.8% overlapped); 0.5 makes
  // 5-9 buckets whose all-reduces overlap backward (35-70%).
  double bucket_mb = 0.5;

  // The clock of the run's events (clock/device_clock.h) and, on the virtual
  // clock, the link between the ranks' devices (clock/link_model.h; none:
  // auto, the GPU profile's link or host: run_link_model) and the GPU whose
  // modeled op times the compute spans take (clock/gpu_time_model.h; "none":
  // the ranks' CPU time; else a name of config/gpu_profiles.h).
  ClockKind clock = ClockKind::virtual_device;
  std::optional<LinkKind> link;
  std::string gpu_profile = "none";
  // Ranks as processes (mpirun): ring collectives over MPI messages or MPI's
  // own (parallel/mpi/mpi_world.h), how long a blocking call may wait, and
  // how long a process may send no heartbeat before it counts as frozen.
  std::string collectives = "ring";  // ring | native
  double comm_timeout_s = 60.0;
  double heartbeat_timeout_s = 5.0;

  // Precision and fp16 loss scaling. The scaler follows torch GradScaler by
  // default, or DeepSpeed's fp16 rules; -1 means the rule set's own default.
  Precision precision = Precision::fp32;
  LossScaleRules loss_scaler = LossScaleRules::torch_grad_scaler;
  float loss_scale = 0.0f;           // > 0: a static scale (DeepSpeed "loss_scale"); 0: dynamic
  int initial_scale_power = 16;      // the first scale is 2^power
  std::int64_t scale_window = -1;    // clean steps before the scale doubles (torch 2000, DeepSpeed 1000)
  int hysteresis = -1;               // DeepSpeed only: overflows absorbed before a back-off (default 2)
  float min_loss_scale = -1.0f;      // DeepSpeed only: the scale never goes below it (default 1)
  // Where the ranks compute: "cpu" (threads of this process) or "cuda" (GPU
  // `gpus[0]`, through the CUDA plugin; one rank for now). Where no GPU is
  // usable a cuda run says so once and trains on the CPU.
  std::string device = "cpu";
  std::vector<int> gpus = {0};

  // Test only: this rank throws at this step (before its backward), to check
  // that a failing rank stops all ranks. -1: off.
  int fail_rank = -1;
  std::int64_t fail_step = 1;
  // A straggler: this rank's compute counts slow_factor times on the virtual
  // clock (its measured CPU work, or its modeled GPU ops), so the others wait
  // for it at every collective. -1: off.
  int slow_rank = -1;
  double slow_factor = 1.0;
  // Test only: this rank writes an inf into its gradients at this step (after
  // they are combined), to check that every rank skips the step. -1: off.
  int overflow_rank = -1;
  std::int64_t overflow_step = 1;

  // Test only: every rank's buffers come from a caching allocator over a
  // pretend device of this many host bytes (core/caching_device_memory.h's
  // HostRawAllocator), to check out-of-memory reports without a GPU. 0: off.
  std::int64_t test_device_capacity = 0;

  // Times every backend op of every rank (ops/op_profile.h; Trainer::op_profile),
  // waiting for the device around each op, so the run is slower. For
  // `shardscope-cli train --profile-ops` and bench_train; not saved with the config.
  bool profile_ops = false;

  int world_size() const { return layout.world_size(); }
  int micro_batch_size() const { return batch / (layout.dp() * accum * micro_batches); }

  std::int64_t warmup_steps() const;
  bool mixed_precision() const { return precision != Precision::fp32; }
};

// The model a run trains: DIR/config.json of init_from when set (ConfigError
// naming the file), else the preset `model`.
ModelConfig run_model_config(const RunConfig& config);

// Throws FieldError (config/run_schema.h) at the first broken rule: a value out
// of its schema range, or fields that do not go together. what() names the
// fields by CLI flag; FieldError::text names them as another surface does.
void validate_run_config(const RunConfig& config);
// The rules of a schedule whose backwards split into B and W (the zero-bubble
// ones, or a schedule file with W's): any precision, ZeRO stage and --checkpoint;
// tp on CPU ranks only.
// `schedule` names it in the messages ("{schedule} zb-h1", "{schedule_file} F").
void validate_split_backward(const RunConfig& config, const std::string& schedule);
// How many times validate_run_config ran in this process (plan/run_plan.h: once per run).
std::int64_t run_config_validations();

// The rules between the pipeline, the data-parallel mode and the ZeRO stage,
// shared with the estimator's settings: naive DataParallel has no pipeline,
// ZeRO-2/3 no pipeline, ZeRO needs DDP. Throws FieldError naming pp, dp_mode, zero.
void check_layout_rules(int pp, int zero_stage, DataParallelMode dp_mode);
// The estimator's settings beside those rules: the ZeRO stage is 0, 1, 2 or 3;
// parameter offload needs ZeRO-3 and optimizer offload a ZeRO stage when dp > 1
// (DeepSpeed's). Throws FieldError naming zero, offload_params, offload_optimizer.
void check_zero_stage_range(int zero_stage);
void check_offload_rules(int zero_stage, int dp, bool offload_params, bool offload_optimizer);

}  // namespace shardscope
