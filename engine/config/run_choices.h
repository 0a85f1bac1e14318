// SPDX-License-Identifier: GPL-3.0-or-later
// The named choices of a run (the enums of RunConfig), apart from the config
// itself so the parallel runtime, the loss scaler and the estimator can name
// them without depending on the trainer.
#pragma once

#include <string_view>

namespace shardscope {

// How data-parallel ranks combine gradients: naive DataParallel (rank 0 is the
// master, as torch.nn.DataParallel) or DistributedDataParallel (ring all-reduce).
enum class DataParallelMode { naive, ddp };
std::string_view data_parallel_mode_name(DataParallelMode mode);

// What the parameters used by forward/backward and the gradients are stored in.
// fp16 and bf16 keep fp32 master weights and AdamW states (mixed precision);
// fp16 scales the loss (train/loss_scaler.h); bf16 has fp32's range and needs no scaler.
enum class Precision { fp32, fp16, bf16 };
std::string_view precision_name(Precision precision);
// Also accepts "no" (accelerate's mixed_precision: no). ConfigError names `field`.
Precision parse_precision(std::string_view name, std::string_view field = "--precision");

// The pipeline schedule (plan/pipeline_schedule.h): GPipe (all forwards,
// then all backwards), 1F1B (one forward, one backward in the steady state),
// or the zero-bubble ZB-H1 and ZB-H2 (the backward split into B and W, the
// W's moved into the bubbles; plan/zero_bubble_schedules.h), or Megatron-LM's
// interleaved 1F1B (v model chunks per stage; plan/interleaved_schedule.h), or
// ZB-V (two chunks per stage in a V, B and W split; plan/zb_v_schedule.h).
enum class PipelineScheduleKind { gpipe, one_f_one_b, zb_h1, zb_h2, interleaved_1f1b, zb_v };
// "gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b" or "zb-v"; parse throws ConfigError naming --schedule for
// anything else.
const char* pipeline_schedule_name(PipelineScheduleKind kind);
PipelineScheduleKind parse_pipeline_schedule_kind(std::string_view name);

// Whose rules the fp16 loss scaler follows (train/loss_scaler.h).
enum class LossScaleRules { torch_grad_scaler, deepspeed };
std::string_view loss_scaler_rules_name(LossScaleRules rules);  // "torch" or "deepspeed"
LossScaleRules parse_loss_scaler_rules(std::string_view name);  // ConfigError naming --loss-scaler

}  // namespace shardscope
