// SPDX-License-Identifier: GPL-3.0-or-later
// MainWindow, part 5: jobs whose ranks are processes. File → Attach… listens
// for a job started from a shell (`train --events-to 127.0.0.1:PORT`); Run
// with "Ranks run as: processes" is in startRun. Both go through the
// RunController, so the views, the log and a recording take their events as
// they take a threaded run's.
#include <spdlog/logger.h>

#include <QAction>
#include <QInputDialog>
#include <QMenu>

#include "main_window.h"
#include "recording_controller.h"

namespace shardscope::ui {
namespace {
constexpr int kDefaultAttachPort = 29400;
}  // namespace

void MainWindow::buildProcessUi() {
  attach_action_ = file_menu_->addAction(QString());
  attach_action_->setObjectName(QStringLiteral("attachToJob"));
  connect(attach_action_, &QAction::triggered, this, [this] {
    bool ok = false;
    const int port = QInputDialog::getInt(
        this, tr("Attach to a job"),
        tr("Listen on port (this machine only); start the job with\ntrain ... --events-to 127.0.0.1:PORT"),
        kDefaultAttachPort, 1, 65535, 1, &ok);
    if (ok) attachToJob(port);
  });
  connect(controller_, &RunController::jobConfigReceived, this, &MainWindow::onJobConfig);
  // A failure found, the work it lost, a restart: as it happens, not only when the run ends.
  connect(controller_, &RunController::failureNoted, this,
          [this](const QString& line) { logger_->warn("{}", line.toStdString()); });
}

void MainWindow::retranslateProcessUi() {
  attach_action_->setText(tr("&Attach to a job..."));
  attach_action_->setToolTip(tr("Show the events of a job started from a shell with --events-to"));
}

bool MainWindow::attachToJob(int port) {
  if (controller_->busy()) return false;
  QString error;
  if (!controller_->attach(port, error)) {
    setStatus([this, error] { return tr("Cannot attach: %1").arg(error); });
    logger_->error("{}", statusText().toStdString());
    return false;
  }
  leaveReplay();
  had_error_ = false;
  port = controller_->jobPort();  // the one chosen, where 0 asked for any
  setStatus(
      [this, port] { return tr("Waiting for a job on 127.0.0.1:%1 (train ... --events-to 127.0.0.1:%1)").arg(port); });
  logger_->info("{}", statusText().toStdString());
  return true;
}

// The attached job connected: its config sets the views up, as Run does.
void MainWindow::onJobConfig(const RunConfig& job) {
  // The job's own plan: its schedule file's rows came with its config, so a relative path or a file
  // changed since the job read it does not matter here.
  const RunPlanPtr run = controller_->jobPlan() ? controller_->jobPlan() : planRun(job);
  if (!run) {  // the job runs a config this window cannot draw (another version's): detach
    controller_->stop();
    return;
  }
  const RunConfig& config = run->config();
  prepareViews(*run);
  recorder_->beginRun(*run);
  const int ranks = config.world_size();
  const QString model = QString::fromStdString(config.model);
  setStatus([this, ranks, model] { return tr("Attached: %1 on %n rank(s)", nullptr, ranks).arg(model); });
  logger_->info("{}", statusText().toStdString());
}

}  // namespace shardscope::ui
