// SPDX-License-Identifier: GPL-3.0-or-later
#include "planner/planner_estimates.h"

#include <QFile>
#include <QFileInfo>

#include "config/run_schema.h"
#include "core/error.h"
#include "core/input_file.h"
#include "estimate/config_import.h"
#include "estimate/formula_text.h"
#include "i18n.h"
#include "io/hf_config.h"

namespace shardscope::ui {

namespace {

bool chinese() { return currentLanguage() == QStringLiteral("zh_CN"); }


// A Hugging Face config.json names its architecture; a DeepSpeed JSON never does.
bool looksLikeModelConfig(const std::string& text) {
  for (const char* key : {"\"model_type\"", "\"architectures\"", "\"n_embd\"", "\"hidden_size\"", "\"n_layer\"",
                          "\"num_hidden_layers\""})
    if (text.find(key) != std::string::npos) return true;
  return false;
}

}  // namespace

PlannerModel examplePlannerModel(PlannerExample example) {
  const bool gpt3 = example == PlannerExample::gpt3_175b;
  PlannerModel m;
  m.label = gpt3 ? PlannerText::tr("GPT-3 175B (example)") : PlannerText::tr("Llama-2-7B (example)");
  // The CLI's --model gpt3-175b / llama-2-7b: the shipped config.json, embedded in the engine (io/model_aliases.h).
  m.shape = load_model_shape(gpt3 ? "gpt3-175b" : "llama-2-7b", &m.warnings);
  return m;
}

PlannerModel presetPlannerModel(const std::string& preset) {
  PlannerModel m;
  m.shape = model_shape_from_config(find_model_preset(preset), preset);
  m.label = QString::fromStdString(preset);
  return m;
}

ConfigKind classifyConfigFile(const std::string& path) {
  const QString suffix = QFileInfo(QString::fromStdString(path)).suffix().toLower();
  if (suffix == QStringLiteral("yaml") || suffix == QStringLiteral("yml")) return ConfigKind::accelerate;
  // Refuses FIFOs, devices, directories and huge files before reading a byte.
  const std::string text = read_input_file(path, "config file");
  return looksLikeModelConfig(text) ? ConfigKind::hf_model : ConfigKind::deepspeed;
}

PlannerImport importPlannerConfigs(const QStringList& paths, const EstimateSettings& current) {
  std::string model_path, deepspeed_path, accelerate_path;
  for (const QString& qpath : paths) {
    const std::string path = qpath.toStdString();
    const ConfigKind kind = classifyConfigFile(path);
    std::string& slot = kind == ConfigKind::hf_model     ? model_path
                        : kind == ConfigKind::deepspeed ? deepspeed_path
                                                        : accelerate_path;
    if (!slot.empty())
      throw ConfigError(path + ": a second " +
                        (kind == ConfigKind::hf_model    ? "model config.json"
                         : kind == ConfigKind::deepspeed ? "DeepSpeed JSON"
                                                         : "accelerate YAML") +
                        " (after " + slot + "): import one of each at a time");
    slot = path;
  }
  PlannerImport out;
  EstimateSettings base = current;
  if (!model_path.empty()) {
    PlannerModel m;
    m.shape = load_model_shape(model_path, &m.warnings);  // the CLI's --model
    m.label = QString::fromStdString(model_path);
    // The exact activations only where ShardScope implements the model; else the choice stays (the CLI's default,
    // the formula, unless the user picked the engine's).
    if (!m.shape.engine_config) base.activations = ActivationMode::formula;
    base.seq = static_cast<int>(std::min<std::int64_t>(m.shape.max_positions, 1 << 24));
    out.model = std::move(m);
  }
  ImportedSettings imported = import_settings(accelerate_path, deepspeed_path);  // the CLI's --accelerate, --deepspeed
  out.warnings = imported.warnings;
  out.nodes = imported.nodes;
  for (const SettingsPatch& patch : imported.patches)
    out.origins.insert(out.origins.end(), patch.origin.begin(), patch.origin.end());
  out.settings = resolve_settings(base, imported.patches, &out.warnings);
  return out;
}

bool settingChanged(std::string_view key, const EstimateSettings& imported, const EstimateSettings& now) {
  const auto value = [key](const EstimateSettings& s) -> std::int64_t {
    for (const Axis axis : kAxes)
      if (key == axis_name(axis)) return s.layout[axis];
    if (key == "zero") return s.zero_stage;
    if (key == "micro_batch") return s.micro_batch_size;
    if (key == "seq") return s.seq;
    if (key == "gpus_per_node") return s.gpus_per_node;
    if (key == "global_batch") return s.global_batch();  // DeepSpeed's train_batch_size: micro-batch x dp x ...
    if (key == "precision") return static_cast<std::int64_t>(s.precision);
    if (key == "recompute") return static_cast<std::int64_t>(s.recompute);
    if (key == "activations") return static_cast<std::int64_t>(s.activations);
    return 0;
  };
  return value(imported) != value(now);
}

const RankMemory* StagePlan::fullest() const {
  if (!estimate || estimate->memory.ranks.empty()) return nullptr;
  return &estimate->memory.ranks[static_cast<std::size_t>(estimate->memory.fullest_rank())];
}

std::array<StagePlan, 4> planZeroStages(const EstimateRequest& request, bool chinese_text) {
  const auto name = [chinese_text](std::string_view key) { return PlannerText::fieldName(key, chinese_text).toStdString(); };
  std::array<StagePlan, 4> plans;
  int refused = 0;
  std::string first_refusal;
  for (int stage = 0; stage <= 3; ++stage) {
    StagePlan& plan = plans[static_cast<std::size_t>(stage)];
    plan.stage = stage;
    EstimateRequest r = request;
    r.settings.zero_stage = stage;
    try {
      validate_estimate_settings(r.settings);
      plan.estimate = compute_estimate(r);
    } catch (const FieldError& e) {
      plan.refused = QString::fromStdString(e.text(name, chinese_text));
    } catch (const ConfigError& e) {
      plan.refused = QString::fromStdString(e.what());
    }
    if (!plan.estimate) {
      ++refused;
      if (first_refusal.empty()) first_refusal = plan.refused.toStdString();
    }
  }
  if (refused == 4) throw ConfigError(first_refusal);
  return plans;
}

QString PlannerText::bytes(std::int64_t value) {
  return QString::fromStdString(decimal_bytes(static_cast<double>(value)));
}

QString PlannerText::lever(const FitLever& lever) {
  // The estimator's levers (estimate/estimate.cpp lever_variants), by their English words.
  static const char* const known[] = {
      QT_TR_NOOP("turn on activation checkpointing"),
      QT_TR_NOOP("selective activation recompute"),
      QT_TR_NOOP("use DDP instead of naive DataParallel"),
      QT_TR_NOOP("offload the optimizer states to the CPU (ZeRO-Offload)"),
      QT_TR_NOOP("halve the micro-batch (same global batch)"),
      QT_TR_NOOP("mixed precision"),
  };
  for (const char* source : known)
    if (lever.change == source) return tr(source);
  if (lever.change.rfind("ZeRO-", 0) == 0) return tr("ZeRO-%1").arg(QString::fromStdString(lever.change.substr(5)));
  return QString::fromStdString(lever.change);
}

QString PlannerText::verdict(const Estimate& e) {
  const FitReport& fit = e.fit;
  const int rank = e.memory.fullest_rank();
  if (!fit.has_capacity) return tr("No GPU chosen: the fit is not checked.");
  if (fit.fits) return tr("fits: %1 free on the fullest GPU (rank %2).").arg(bytes(fit.margin_bytes)).arg(rank);
  const QString head = tr("does not fit by %1 on rank %2").arg(bytes(-fit.margin_bytes)).arg(rank);
  QStringList levers;
  for (std::size_t i = 0; i < fit.levers.size() && i < 2; ++i) {
    const FitLever& l = fit.levers[i];
    levers << (l.fits ? tr("%1 −%2 (then fits)") : tr("%1 −%2")).arg(lever(l), bytes(l.saves_bytes));
  }
  if (levers.isEmpty())
    return tr("%1: no single setting saves memory; add GPUs (data-parallel ranks or pipeline stages).").arg(head);
  return tr("%1: %2.").arg(head, levers.join(tr(", ")));
}

QString PlannerText::shortVerdict(const FitReport& fit) {
  if (!fit.has_capacity) return QString();
  return fit.fits ? tr("fits, %1 free").arg(bytes(fit.margin_bytes)) : tr("over by %1").arg(bytes(-fit.margin_bytes));
}

QString PlannerText::fieldName(std::string_view key) { return fieldName(key, chinese()); }

QString PlannerText::fieldName(std::string_view key, bool chinese_text) {
  if (const RunField* field = find_run_field(key); field != nullptr && !field->label.empty()) {
    const std::string_view label = chinese_text ? field->label.zh : field->label.en;
    return QString::fromUtf8(label.data(), static_cast<qsizetype>(label.size()));
  }
  if (key == "micro_batch") return tr("Micro-batch per GPU");
  if (key == "tp") return tr("Tensor-parallel ranks");
  if (key == "sequence_parallel") return tr("Sequence parallelism");
  if (key == "gpus_per_node") return tr("GPUs per node");
  if (key == "offload_optimizer") return tr("Optimizer offload");
  if (key == "offload_params") return tr("Parameter offload");
  if (key == "recompute") return tr("Activation checkpointing");
  return QString::fromStdString(flag_of(key));
}

}  // namespace shardscope::ui
