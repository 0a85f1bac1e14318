// SPDX-License-Identifier: GPL-3.0-or-later
// File → Open config for a run…: the GUI's side of `train --deepspeed` and
// `train --accelerate` (engine/config/run_import.h). The file's values go onto
// the panel's current settings exactly as the CLI puts them onto its flags'
// defaults; what the file set is said in the status (the importer's summary)
// and its warnings go to the log. Settings without a panel row stay with the
// window (file_settings_) and are applied to each run it starts.
#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>

#include <spdlog/logger.h>

#include "config/run_import.h"
#include "config/run_schema.h"
#include "config_panel.h"
#include "main_window.h"

namespace shardscope::ui {

namespace {

bool isYaml(const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  return suffix == QLatin1String("yaml") || suffix == QLatin1String("yml");
}

// The keys the file set that the panel has no row for, with their values.
std::vector<std::pair<std::string, nlohmann::json>> hiddenSettings(const RunImport& import,
                                                                   const RunConfig& config) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  for (const std::string& key : import.fields) {
    const RunField* field = find_run_field(key);
    if (field != nullptr && field->label.en.empty()) out.emplace_back(key, field->get(config));
  }
  return out;
}

}  // namespace

void MainWindow::buildRunConfigUi() {
  open_run_config_action_ = file_menu_->addAction(QString());
  open_run_config_action_->setObjectName(QStringLiteral("openRunConfig"));
  connect(open_run_config_action_, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open config for a run"), QString(),
        tr("DeepSpeed JSON or accelerate YAML (*.json *.yaml *.yml);;All files (*)"));
    if (!path.isEmpty()) openRunConfig(path);
  });
}

void MainWindow::retranslateRunConfigUi() {
  open_run_config_action_->setText(tr("Open &config for a run (DeepSpeed, accelerate)..."));
  open_run_config_action_->setToolTip(
      tr("Sets the panel from a DeepSpeed JSON or an accelerate YAML, as train --deepspeed / --accelerate does"));
}

RunPlanPtr MainWindow::planRun(RunConfig config, bool report) {
  try {
    return make_run_plan(std::move(config));
  } catch (const std::exception& e) {
    if (!report) return nullptr;
    const QString reason = QString::fromUtf8(e.what());
    setStatus([this, reason] { return tr("Cannot run: %1").arg(reason); });
    appendLog(statusText(), true);
    return nullptr;
  }
}

bool MainWindow::openRunConfig(const QString& path) {
  if (controller_->busy()) return false;
  RunConfig config = panel_->config();
  RunImport import;
  try {
    const std::string file = path.toStdString();
    import = isYaml(path) ? import_accelerate_run(load_accelerate_config(file), config, false)
                          : import_deepspeed_run(load_deepspeed_config(file, "Open config"), config);
    validate_run_config(config);
  } catch (const std::exception& e) {
    const QString reason = QString::fromUtf8(e.what());
    setStatus([this, reason] { return tr("Config not opened: %1").arg(reason); });
    appendLog(statusText(), true);
    return false;
  }
  file_settings_ = hiddenSettings(import, config);
  panel_->setConfig(config);
  for (const std::string& warning : import.warnings) logger_->warn("{}", warning);
  QStringList hidden;
  for (const auto& [key, value] : file_settings_)
    hidden << QStringLiteral("%1 %2").arg(QString::fromStdString(flag_of(key)),
                                          QString::fromStdString(field_value_text(run_field(key), value)));
  const QString summary = QString::fromStdString(import.summary), extra = hidden.join(QStringLiteral(", "));
  setStatus([this, summary, extra] {
    return extra.isEmpty() ? tr("Run set %1.").arg(summary)
                           : tr("Run set %1. Not on the panel, applied to every run: %2.").arg(summary, extra);
  });
  appendLog(statusText(), false);
  return true;
}

}  // namespace shardscope::ui
