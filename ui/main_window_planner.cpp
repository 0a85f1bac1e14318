// SPDX-License-Identifier: GPL-3.0-or-later
// MainWindow, part 4: the memory planner's entries in the File menu (Plan
// memory…, Import config…). The planner is a window of its own, so the main
// window's minimum size does not grow; it plans, it never runs.
#include <QAction>
#include <QFileDialog>
#include <QMenu>

#include "main_window.h"
#include "planner/planner_dialog.h"

namespace shardscope::ui {

void MainWindow::buildPlannerUi() {
  file_menu_->addSeparator();
  plan_action_ = file_menu_->addAction(QString());
  plan_action_->setObjectName(QStringLiteral("planMemory"));
  import_config_action_ = file_menu_->addAction(QString());
  import_config_action_->setObjectName(QStringLiteral("importConfig"));
  connect(plan_action_, &QAction::triggered, this, [this] {
    planner()->show();
    planner()->raise();
  });
  connect(import_config_action_, &QAction::triggered, this, [this] {
    const QStringList paths = QFileDialog::getOpenFileNames(
        this, tr("Import config"), QString(),
        tr("Configs: config.json, DeepSpeed JSON, accelerate YAML (*.json *.yaml *.yml);;All files (*)"));
    if (paths.isEmpty()) return;
    planner()->show();
    planner()->raise();
    planner()->importFiles(paths);
  });
}

void MainWindow::retranslatePlannerUi() {
  plan_action_->setText(tr("&Plan memory..."));
  plan_action_->setToolTip(tr("Per-GPU memory of any model at ZeRO stages 0-3, with formulas and a verdict"));
  import_config_action_->setText(tr("&Import config (config.json, DeepSpeed, accelerate)..."));
}

PlannerDialog* MainWindow::planner() {
  if (planner_ == nullptr) planner_ = new PlannerDialog(this);  // made when first asked for
  return planner_;
}

}  // namespace shardscope::ui
