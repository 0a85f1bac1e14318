// SPDX-License-Identifier: GPL-3.0-or-later
// What the memory planner asks the engine, without widgets: the model (an
// engine preset, a bundled example config.json, or an imported one), the
// imported config files (the importers of `shardscope-cli estimate --model /
// --deepspeed / --accelerate`), one estimate per ZeRO stage (compute_estimate,
// the CLI's own), and the fit report worded in the interface's language.
// Models too large to run here are planned, never run.
#pragma once

#include <QCoreApplication>
#include <QString>
#include <QStringList>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "estimate/estimate.h"

namespace shardscope::ui {

struct PlannerModel {
  ModelShape shape;
  QString label;                      // "GPT-3 175B (example)", a preset name, or the file
  std::vector<std::string> warnings;  // the importer's (unknown keys, notes)
};

enum class PlannerExample { gpt3_175b, llama_2_7b };

// The bundled example configs (resources/examples, the CLI's --model gpt3-175b and
// llama-2-7b: io/model_aliases.h), read by the same Hugging Face importer as a config.json on disk.
PlannerModel examplePlannerModel(PlannerExample example);
// An engine preset (gpt-tiny ... bert-base): a model the engine can also train.
PlannerModel presetPlannerModel(const std::string& preset);

// What a config file is, by its name and keys: accelerate YAML (.yaml/.yml),
// a Hugging Face config.json (model_type, architectures, n_embd, hidden_size),
// else a DeepSpeed JSON. Reads it through the engine's input checks, so a
// FIFO or a device is refused (ConfigError naming the path), never waited on.
enum class ConfigKind { hf_model, deepspeed, accelerate };
ConfigKind classifyConfigFile(const std::string& path);

struct PlannerImport {
  std::optional<PlannerModel> model;  // when a config.json was among the files
  EstimateSettings settings;          // `current` with the files applied (resolve_settings)
  int nodes = 0;                      // accelerate's num_machines; 0 when no file says
  std::vector<std::string> warnings;
  std::vector<std::pair<std::string, std::string>> origins;  // (setting, file: key) as the CLI prints them
};

// Loads the files (any mix of one config.json, one DeepSpeed JSON, one
// accelerate YAML) over the planner's current settings, in the CLI's order
// (accelerate, the DeepSpeed file it names, the DeepSpeed JSON). Throws
// ConfigError / FormatError with the engine's message naming the file and key.
PlannerImport importPlannerConfigs(const QStringList& paths, const EstimateSettings& current);

// Whether the setting `key` of an import's origins ("zero", "micro_batch", ...)
// differs between the imported settings and the planner's `now`: the user has
// changed its control since, so "from <file>" no longer holds. Settings no
// control shows (accumulation, offloads) stay as imported.
bool settingChanged(std::string_view key, const EstimateSettings& imported, const EstimateSettings& now);

// One ZeRO stage's estimate, or why the layout refuses that stage.
struct StagePlan {
  int stage = 0;
  std::optional<Estimate> estimate;
  QString refused;  // the engine's reason (FieldError in the interface's language)

  const RankMemory* fullest() const;
};

// compute_estimate for stages 0-3 of `request` (its zero_stage replaced),
// refusals worded in Chinese when `chinese_text`. Throws ConfigError when the
// settings fail for every stage alike (e.g. a sequence the model cannot hold):
// the caller keeps its previous plan. Runs on any thread (the planner's worker).
std::array<StagePlan, 4> planZeroStages(const EstimateRequest& request, bool chinese_text);

// The planner's words for the engine's fit report, translated.
class PlannerText {
  Q_DECLARE_TR_FUNCTIONS(shardscope::ui::PlannerText)

 public:
  // "Does not fit by 3.02 TB on rank 0: offload the optimizer states to the CPU
  // (ZeRO-Offload) −1.40 TB, turn on activation checkpointing −296 GB."
  static QString verdict(const Estimate& estimate);
  // Under a bar: "fits, 12.3 GB free" / "over by 2.7 TB".
  static QString shortVerdict(const FitReport& fit);
  static QString lever(const FitLever& lever);
  // A field of the estimator's settings as the planner labels it ({zero} -> "ZeRO stage").
  static QString fieldName(std::string_view key);  // in the interface's language
  static QString fieldName(std::string_view key, bool chinese_text);
  static QString bytes(std::int64_t bytes);  // decimal, as the CLI: "2.79 TB"
};

}  // namespace shardscope::ui
