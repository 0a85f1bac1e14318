// SPDX-License-Identifier: GPL-3.0-or-later
#include "config/run_choices.h"

#include <string>

#include "core/error.h"

namespace shardscope {

std::string_view data_parallel_mode_name(DataParallelMode mode) {
  return mode == DataParallelMode::naive ? "naive" : "ddp";
}

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::fp32: break;
  }
  return "fp32";
}

Precision parse_precision(std::string_view name, std::string_view field) {
  if (name == "no") return Precision::fp32;
  for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16})
    if (name == precision_name(p)) return p;
  throw ConfigError(std::string(field) + ": \"" + std::string(name) + "\" is not one of fp32, fp16, bf16");
}

const char* pipeline_schedule_name(PipelineScheduleKind kind) {
  switch (kind) {
    case PipelineScheduleKind::gpipe:
      return "gpipe";
    case PipelineScheduleKind::one_f_one_b:
      return "1f1b";
    case PipelineScheduleKind::zb_h1:
      return "zb-h1";
    case PipelineScheduleKind::zb_h2:
      return "zb-h2";
    case PipelineScheduleKind::interleaved_1f1b:
      return "interleaved-1f1b";
    case PipelineScheduleKind::zb_v:
      return "zb-v";
  }
  return "?";
}

PipelineScheduleKind parse_pipeline_schedule_kind(std::string_view name) {
  for (auto kind : {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b, PipelineScheduleKind::zb_h1,
                    PipelineScheduleKind::zb_h2, PipelineScheduleKind::interleaved_1f1b, PipelineScheduleKind::zb_v})
    if (name == pipeline_schedule_name(kind)) return kind;
  throw ConfigError("--schedule must be gpipe, 1f1b, zb-h1, zb-h2, interleaved-1f1b or zb-v (got '" +
                    std::string(name) + "')");
}

std::string_view loss_scaler_rules_name(LossScaleRules rules) {
  return rules == LossScaleRules::deepspeed ? "deepspeed" : "torch";
}

LossScaleRules parse_loss_scaler_rules(std::string_view name) {
  if (name == "torch") return LossScaleRules::torch_grad_scaler;
  if (name == "deepspeed") return LossScaleRules::deepspeed;
  throw ConfigError("--loss-scaler must be torch or deepspeed (got \"" + std::string(name) + "\")");
}

}  // namespace shardscope
