// SPDX-License-Identifier: GPL-3.0-or-later
// Pipeline schedules in the window (issue 30): File → Open schedule… sets a
// hand-written schedule file on the panel once the engine's reader
// (plan/schedule_file.h) has checked it against the panel's layout; the
// "Schedules" tab compares the panel's layout under every schedule.
#include <QAction>
#include <QFileDialog>
#include <QMenu>
#include <QMessageBox>
#include <QTabWidget>

#include "config_panel.h"
#include "main_window.h"
#include "plan/schedule_file.h"
#include "views/schedule_compare.h"

namespace shardscope::ui {

void MainWindow::buildScheduleUi() {
  // The comparison's tab, last: the tabs before it keep their places (lessons and screenshots name them by index).
  schedule_compare_ = new ScheduleCompareView;
  schedule_compare_->setConfigSource([this] { return panel_->config(); });
  tabs_->addTab(schedule_compare_, QString());
  tab_sources_.emplace_back(schedule_compare_, QT_TR_NOOP("Schedules"));
  open_schedule_action_ = file_menu_->addAction(QString());
  open_schedule_action_->setObjectName(QStringLiteral("openSchedule"));
  connect(open_schedule_action_, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open schedule"), QString(),
                                                      tr("Pipeline schedule CSV (*.csv);;All files (*)"));
    if (!path.isEmpty()) openScheduleFile(path);
  });
}

void MainWindow::retranslateScheduleUi() {
  open_schedule_action_->setText(tr("Open &schedule..."));
  open_schedule_action_->setToolTip(
      tr("Runs a pipeline schedule written by hand: torch.distributed.pipelining's CSV, a row per rank of "
         "{stage}{F|B|I|W}{micro-batch}, as train --schedule-file"));
}

bool MainWindow::openScheduleFile(const QString& path) {
  if (controller_->busy()) return false;
  RunConfig config = panel_->config();
  config.schedule_file = path.toStdString();
  try {
    // The file says how many stages and micro-batches it schedules: the panel takes them from it.
    const ScheduleFile file = load_schedule_file(config.schedule_file);
    config.layout[Axis::pp] = file.stages;
    config.micro_batches = file.micro_batches;
    validate_run_config(config);
    validate_schedule_file(file, config);  // the file as read above against the panel's layout
  } catch (const std::exception& e) {
    const QString reason = QString::fromUtf8(e.what());
    setStatus([this, reason] { return tr("Schedule not opened: %1").arg(reason); });
    appendLog(statusText(), true);
    // Not modal: the window (and a test driving it) goes on; the dialog says why.
    auto* box = new QMessageBox(QMessageBox::Warning, tr("Schedule not opened"), reason, QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("scheduleRefused"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
    return false;
  }
  panel_->setConfig(config);
  setStatus([this, path] { return tr("Runs use the schedule in %1.").arg(path); });
  appendLog(statusText(), false);
  return true;
}

}  // namespace shardscope::ui
