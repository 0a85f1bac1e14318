// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/metrics_json.h"

#include <cstdint>
#include <limits>
#include <string>

#include "core/error.h"

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
  j["loss_scale"] = m.loss_scale;
  j["skipped"] = m.skipped;
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
          {"bucket_mb", c.bucket_mb},
          {"precision", std::string(precision_name(c.precision))},
          {"loss_scaler", std::string(loss_scaler_rules_name(c.loss_scaler))},
          {"loss_scale", c.loss_scale},
          {"initial_scale_power", c.initial_scale_power},
          {"scale_window", c.scale_window},
          {"hysteresis", c.hysteresis},
          {"min_loss_scale", c.min_loss_scale},
          {"device", c.device},
          {"gpus", c.gpus}};
}

namespace {

const nlohmann::json& config_key(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) throw ConfigError(std::string("run config JSON: missing key \"") + key + "\"");
  return *it;
}

[[noreturn]] void bad_key(const char* key, const char* expected) {
  throw ConfigError(std::string("run config JSON: key \"") + key + "\" must be " + expected);
}

std::string config_string(const nlohmann::json& j, const char* key) {
  const auto& v = config_key(j, key);
  if (!v.is_string()) bad_key(key, "a string");
  return v.get<std::string>();
}

std::int64_t config_int(const nlohmann::json& j, const char* key) {
  const auto& v = config_key(j, key);
  if (!v.is_number_integer()) bad_key(key, "an integer");
  return v.get<std::int64_t>();
}

int config_int32(const nlohmann::json& j, const char* key) {
  const std::int64_t v = config_int(j, key);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) bad_key(key, "a 32-bit integer");
  return static_cast<int>(v);
}

double config_number(const nlohmann::json& j, const char* key) {
  const auto& v = config_key(j, key);
  if (!v.is_number()) bad_key(key, "a number");
  return v.get<double>();
}

}  // namespace

RunConfig run_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw ConfigError("run config JSON: expected an object");
  RunConfig c;
  c.model = config_string(j, "model");
  c.steps = config_int(j, "steps");
  c.batch = config_int32(j, "batch");
  c.seq = config_int32(j, "seq");
  c.lr = static_cast<float>(config_number(j, "lr"));
  c.min_lr_ratio = static_cast<float>(config_number(j, "min_lr_ratio"));
  c.warmup = config_int(j, "warmup");
  c.weight_decay = static_cast<float>(config_number(j, "weight_decay"));
  c.grad_clip = static_cast<float>(config_number(j, "grad_clip"));
  {
    const auto& v = config_key(j, "seed");
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
      bad_key("seed", "a non-negative integer");
    c.seed = v.get<std::uint64_t>();
  }
  c.data = config_string(j, "data");
  if (c.data == "<default corpus>") c.data.clear();
  c.eval_every = config_int(j, "eval_every");
  c.eval_batches = config_int32(j, "eval_batches");
  c.dp = config_int32(j, "dp");
  c.pp = config_int32(j, "pp");
  c.micro_batches = config_int32(j, "micro_batches");
  try {
    c.schedule = parse_pipeline_schedule_kind(config_string(j, "schedule"));
  } catch (const ConfigError&) {
    bad_key("schedule", "\"gpipe\" or \"1f1b\"");
  }
  const std::string mode = config_string(j, "dp_mode");
  if (mode == data_parallel_mode_name(DataParallelMode::naive)) c.dp_mode = DataParallelMode::naive;
  else if (mode == data_parallel_mode_name(DataParallelMode::ddp)) c.dp_mode = DataParallelMode::ddp;
  else bad_key("dp_mode", "\"naive\" or \"ddp\"");
  c.zero_stage = config_int32(j, "zero");
  c.accum = config_int32(j, "accum");
  const std::string checkpoint = config_string(j, "checkpoint");
  if (checkpoint == "full") c.checkpoint = true;
  else if (checkpoint == "none") c.checkpoint = false;
  else bad_key("checkpoint", "\"full\" or \"none\"");
  c.bucket_mb = config_number(j, "bucket_mb");
  // Precision keys came with version 2 recordings; older files ran in fp32.
  if (j.contains("precision")) {
    try {
      c.precision = parse_precision(config_string(j, "precision"));
      c.loss_scaler = parse_loss_scaler_rules(config_string(j, "loss_scaler"));
    } catch (const ConfigError&) {
      bad_key("precision", "\"fp32\", \"fp16\" or \"bf16\" with loss_scaler \"torch\" or \"deepspeed\"");
    }
    c.loss_scale = static_cast<float>(config_number(j, "loss_scale"));
    c.initial_scale_power = config_int32(j, "initial_scale_power");
    c.scale_window = config_int(j, "scale_window");
    c.hysteresis = config_int32(j, "hysteresis");
    c.min_loss_scale = static_cast<float>(config_number(j, "min_loss_scale"));
  }
  if (j.contains("device")) {  // recordings before devices ran on the CPU
    c.device = config_string(j, "device");
    const auto& gpus = config_key(j, "gpus");
    if (!gpus.is_array()) bad_key("gpus", "an array of GPU indices");
    c.gpus.clear();
    for (const auto& g : gpus) {
      if (!g.is_number_integer()) bad_key("gpus", "an array of GPU indices");
      c.gpus.push_back(g.get<int>());
    }
  }
  // Derived: it must agree with the fields it comes from.
  if (c.dp <= 0 || c.accum <= 0 || c.micro_batches <= 0 || config_int(j, "micro_batch") != c.micro_batch())
    bad_key("micro_batch", "batch / (dp x accum x micro_batches)");
  return c;
}

}  // namespace shardscope
