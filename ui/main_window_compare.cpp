// SPDX-License-Identifier: GPL-3.0-or-later
// MainWindow, comparing two runs: "Pin this run" (toolbar) keeps the last
// run's loss curve and memory peaks on screen while the next runs are drawn
// over and beside them; unchecking it clears them. The lessons that compare
// two runs pin the first before loading the second (LessonsPanel::tryComparison).
#include <spdlog/logger.h>

#include <QAction>
#include <QToolBar>

#include "main_window.h"
#include "run_controller.h"
#include "views/loss_plot.h"
#include "views/memory_bars.h"
#include "views/pipeline_timeline.h"

namespace shardscope::ui {

void MainWindow::buildCompareUi(QToolBar* bar) {
  pin_action_ = bar->addAction(QString());
  pin_action_->setObjectName(QStringLiteral("pinRun"));
  pin_action_->setCheckable(true);
  connect(pin_action_, &QAction::toggled, this, [this](bool pinned) {
    if (pinned)
      pinRun();
    else
      unpinRun();
  });
}

void MainWindow::retranslateCompareUi() {
  pin_action_->setText(tr("Pin this run"));
  pin_action_->setToolTip(
      tr("Keep this run's loss curve and memory bars on screen and draw the next run over and "
         "beside them, to compare two runs. Uncheck to clear."));
}

void MainWindow::pinRun() {
  if (loss_->trainPointCount() == 0 || controller_->busy()) {  // nothing finished to keep
    const QSignalBlocker block(pin_action_);
    pin_action_->setChecked(loss_->pinned());
    return;
  }
  loss_->pin();
  memory_->pin(run_label_);
  if (auto* timeline = findChild<PipelineTimelineView*>(QStringLiteral("pipeline_timeline")))
    timeline->pin(run_label_);  // stacked above the next run's
  {
    const QSignalBlocker block(pin_action_);
    pin_action_->setChecked(true);
  }
  logger_->info("{}", tr("Pinned: %1. The next run is drawn over and beside it.").arg(run_label_).toStdString());
}

void MainWindow::unpinRun() {
  loss_->unpin();
  memory_->unpin();
  if (auto* timeline = findChild<PipelineTimelineView*>(QStringLiteral("pipeline_timeline"))) timeline->unpin();
  const QSignalBlocker block(pin_action_);
  pin_action_->setChecked(false);
}

void MainWindow::pinThenLoad(const RunConfig& config, double speed) {
  if (controller_->busy()) return;
  if (!loss_->pinned()) pinRun();
  loadLessonRun(config, speed);
}

}  // namespace shardscope::ui
