// SPDX-License-Identifier: GPL-3.0-or-later
// MainWindow, pacing: the playback speed handed to the views, the run held
// while a view still draws (slow motion), and "One step, slowly", which draws
// the last completed step again at the chosen speed in every view.
#include <spdlog/logger.h>

#include <QComboBox>
#include <QPushButton>

#include "main_window.h"
#include "run_controller.h"
#include "views/event_view.h"

namespace shardscope::ui {

void MainWindow::buildPacingUi() {
  slowly_ = new QPushButton;
  slowly_->setObjectName(QStringLiteral("oneStepSlowly"));
  connect(slowly_, &QPushButton::clicked, this, &MainWindow::replayLastStep);
  controller_->setViewsDrawing([this] {
    for (const EventView* view : views_)
      if (view->drawing()) return true;
    return false;
  });
}

void MainWindow::retranslatePacingUi() {
  slowly_->setText(tr("One step, slowly"));
  slowly_->setToolTip(tr("Draw the last completed step again, every transfer, at the chosen playback speed."));
}

void MainWindow::applyPlaybackSpeed(double speed) {
  controller_->setPlaybackSpeed(speed);
  for (EventView* view : views_) view->setPlaybackSpeed(speed);
}

void MainWindow::replayLastStep() {
  if (last_completed_step_ <= 0 || controller_->state() == RunController::State::running) return;
  for (EventView* view : views_) view->replayStep(last_completed_step_);
  logger_->info("{}",
                tr("Drawing step %1 again at %2.").arg(last_completed_step_).arg(speed_->currentText()).toStdString());
}

}  // namespace shardscope::ui
