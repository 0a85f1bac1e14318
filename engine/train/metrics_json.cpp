// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/metrics_json.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "config/run_schema.h"
#include "core/error.h"
#include "model/mixture_of_experts.h"

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
  j["virtual_step_s"] = m.virtual_step_s;
  j["modeled_tokens_per_s"] = m.modeled_tokens_per_s;
  j["forward_s"] = m.forward_s;
  j["backward_s"] = m.backward_s;
  j["optimizer_s"] = m.optimizer_s;
  j["loss_scale"] = m.loss_scale;
  j["skipped"] = m.skipped;
  j["eval_loss"] = m.eval_loss ? nlohmann::json(*m.eval_loss) : nlohmann::json(nullptr);
  j["memory"] = memory_to_json(m.memory);
  j["memory_peak"] = memory_to_json(m.memory_peak);
  if (m.moe) {  // a mixture-of-experts model's routing (model/mixture_of_experts.h)
    j["aux_loss"] = m.moe->aux_loss();
    j["routed_tokens"] = m.moe->routed;
    j["dropped_tokens"] = m.moe->dropped;
    j["tokens_per_expert"] = m.moe->tokens_per_expert;
  }
  return j;
}

// Every saved field of the schema (config/run_schema.h), and the micro-batch the others make.
nlohmann::json run_config_to_json(const RunConfig& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const RunField& field : run_fields())
    if (field.saved != Saved::never) j[std::string(field.key)] = field.get(c);
  j["micro_batch"] = c.micro_batch_size();
  return j;
}

namespace {
// A key of run config JSON, by name: 'run config JSON: key "zero": ...'.
std::string json_key_name(std::string_view key) {
  return "key \"" + std::string(key) + "\"";
}
}  // namespace

RunConfig run_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw ConfigError("run config JSON: expected an object");
  RunConfig c;
  for (const RunField& field : run_fields()) {
    if (field.saved == Saved::never) continue;
    const auto it = j.find(field.key);
    if (it == j.end()) {
      if (field.saved != Saved::optional)
        throw ConfigError("run config JSON: missing key \"" + std::string(field.key) + "\"");
      // An older recording: the default applies, or what the key's absence meant then (its wall clock).
      if (!field.legacy.empty()) set_field(c, field, std::string(field.legacy));
      continue;
    }
    try {
      set_field(c, field, *it);
    } catch (const FieldError& e) {
      throw ConfigError("run config JSON: " + e.text(json_key_name));
    }
  }
  // Derived: it must agree with the fields it comes from.
  const auto micro_batch = j.find("micro_batch");
  if (micro_batch == j.end() || !micro_batch->is_number_integer() || c.layout.dp() <= 0 || c.accum <= 0 ||
      c.micro_batches <= 0 || micro_batch->get<std::int64_t>() != c.micro_batch_size())
    throw ConfigError("run config JSON: key \"micro_batch\" must be batch / (dp x accum x micro_batches)");
  return c;
}

nlohmann::json run_metadata_to_json(const RunPlan& run) {
  nlohmann::json j = run_config_to_json(run.config());
  if (run.schedule_file()) j["schedule_file_rows"] = schedule_csv_rows(*run.schedule_file());
  return j;
}

RunPlanPtr run_plan_from_metadata(const nlohmann::json& j) {
  RunConfig config = run_config_from_json(j);
  const auto rows = j.find("schedule_file_rows");
  if (rows == j.end()) return make_run_plan(std::move(config));
  const auto is_string = [](const nlohmann::json& row) { return row.is_string(); };
  if (config.schedule_file.empty() || !rows->is_array() || !std::all_of(rows->begin(), rows->end(), is_string))
    throw ConfigError(
        "run config JSON: key \"schedule_file_rows\" must be a list of strings, a row of actions per "
        "rank, beside a \"schedule_file\"");
  std::string csv;
  for (const nlohmann::json& row : *rows) {
    csv += row.get_ref<const std::string&>();
    csv += '\n';
  }
  ScheduleFile file = parse_schedule_csv(csv, config.schedule_file + " (as recorded)");
  return make_run_plan(std::move(config), std::move(file));
}

}  // namespace shardscope
