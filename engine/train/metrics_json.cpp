// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/metrics_json.h"

namespace shardscope {

nlohmann::json memory_to_json(const MemoryBytes& bytes) {
  nlohmann::json j = nlohmann::json::object();
  for (MemoryCategory c : kAllMemoryCategories) j[std::string(memory_category_name(c))] = bytes[c];
  return j;
}

nlohmann::json step_metrics_to_json(const StepMetrics& m) {
  nlohmann::json j;
  j["step"] = m.step;
  j["loss"] = m.loss;
  j["lr"] = m.lr;
  j["grad_norm"] = m.grad_norm;
  j["tokens_per_s"] = m.tokens_per_s;
  j["step_time_s"] = m.step_time_s;
  j["forward_s"] = m.forward_s;
  j["backward_s"] = m.backward_s;
  j["optimizer_s"] = m.optimizer_s;
  j["eval_loss"] = m.eval_loss ? nlohmann::json(*m.eval_loss) : nlohmann::json(nullptr);
  j["memory"] = memory_to_json(m.memory);
  j["memory_peak"] = memory_to_json(m.memory_peak);
  return j;
}

nlohmann::json run_config_to_json(const RunConfig& c) {
  return {{"model", c.model},
          {"steps", c.steps},
          {"batch", c.batch},
          {"seq", c.seq},
          {"lr", c.lr},
          {"min_lr_ratio", c.min_lr_ratio},
          {"warmup", c.warmup_steps()},
          {"weight_decay", c.weight_decay},
          {"grad_clip", c.grad_clip},
          {"seed", c.seed},
          {"data", c.data.empty() ? "<default corpus>" : c.data},
          {"eval_every", c.eval_every},
          {"eval_batches", c.eval_batches},
          {"dp", c.dp},
          {"pp", c.pp},
          {"micro_batches", c.micro_batches},
          {"schedule", pipeline_schedule_name(c.schedule)},
          {"dp_mode", std::string(data_parallel_mode_name(c.dp_mode))},
          {"zero", c.zero_stage},
          {"accum", c.accum},
          {"micro_batch", c.micro_batch()},
          {"checkpoint", c.checkpoint ? "full" : "none"},
          {"bucket_mb", c.bucket_mb}};
}

}  // namespace shardscope
