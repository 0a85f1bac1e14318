// SPDX-License-Identifier: GPL-3.0-or-later
// MainWindow, part 3: recordings. The File menu (open, record next run, export
// a Chrome trace) and the replay bar whose slider scrubs an opened recording
// through the same path live events take (onEvents).
#include <QAction>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QSlider>

#include <algorithm>
#include <limits>

#include "main_window.h"
#include "recording_controller.h"

namespace shardscope::ui {

void MainWindow::buildRecordingUi() {
  file_menu_ = menuBar()->addMenu(QString());
  open_action_ = file_menu_->addAction(QString());
  open_action_->setObjectName(QStringLiteral("openRecording"));
  open_action_->setShortcut(QKeySequence::Open);
  record_action_ = file_menu_->addAction(QString());
  record_action_->setObjectName(QStringLiteral("recordNextRun"));
  export_action_ = file_menu_->addAction(QString());
  export_action_->setObjectName(QStringLiteral("exportChromeTrace"));

  replay_bar_ = new QWidget;
  replay_bar_->setObjectName(QStringLiteral("replayBar"));
  auto* row = new QHBoxLayout(replay_bar_);
  row->setContentsMargins(4, 2, 4, 2);
  replay_label_ = new QLabel;
  replay_slider_ = new QSlider(Qt::Horizontal);
  replay_slider_->setObjectName(QStringLiteral("replaySlider"));
  replay_slider_->setRange(0, 0);
  replay_time_ = new QLabel;
  replay_time_->setObjectName(QStringLiteral("replayTime"));
  replay_label_->setBuddy(replay_slider_);
  row->addWidget(replay_label_);
  row->addWidget(replay_slider_, 1);
  row->addWidget(replay_time_);
  replay_bar_->hide();

  connect(recorder_, &RecordingController::status, this, [this](std::function<QString()> text, bool error) {
    appendLog(text(), error);
    if (error) setStatus(std::move(text));
    updateControls();
  });
  connect(controller_, &RunController::eventsDrained, recorder_, &RecordingController::record);
  connect(replay_slider_, &QSlider::valueChanged, this, [this](int value) { replayTo(replayTimeNs(value)); });
  connect(open_action_, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open recording"), QString(),
                                                      tr("ShardScope recordings (*.ssrun);;All files (*)"));
    if (!path.isEmpty()) openRecording(path);
  });
  connect(record_action_, &QAction::triggered, this, [this] {
    QString path = QFileDialog::getSaveFileName(this, tr("Record next run"), recorder_->recordPath(),
                                                tr("ShardScope recordings (*.ssrun)"));
    if (path.isEmpty()) return;
    if (!path.endsWith(QStringLiteral(".ssrun"))) path += QStringLiteral(".ssrun");
    recorder_->setRecordPath(path);
    setStatus([this, path] { return tr("The next run will be recorded to %1.").arg(path); });
  });
  connect(export_action_, &QAction::triggered, this, [this] {
    QString path = QFileDialog::getSaveFileName(this, tr("Export Chrome trace"), QString(),
                                                tr("Chrome traces (*.json)"));
    if (path.isEmpty()) return;
    if (!path.endsWith(QStringLiteral(".json"))) path += QStringLiteral(".json");
    exportChromeTrace(path);
  });
}

void MainWindow::retranslateRecordingUi() {
  file_menu_->setTitle(tr("&File"));
  open_action_->setText(tr("&Open recording..."));
  record_action_->setText(tr("&Record next run..."));
  export_action_->setText(tr("&Export Chrome trace..."));
  replay_label_->setText(tr("Replay time"));
  replay_slider_->setToolTip(tr("Drag to replay the recording up to this time"));
  if (recorder_->hasRecording()) {
    const double shown = static_cast<double>(replayTimeNs(replay_slider_->value())) / 1e9;
    const double total = static_cast<double>(recorder_->lastTimeNs()) / 1e9;
    replay_time_->setText(tr("%1 s of %2 s").arg(shown, 0, 'f', 3).arg(total, 0, 'f', 3));
  }
}

std::int64_t MainWindow::replayTimeNs(int sliderValue) const {
  if (sliderValue >= replay_slider_->maximum()) return recorder_->lastTimeNs();  // the end: every event
  return static_cast<std::int64_t>(sliderValue) * replay_ns_per_tick_;
}

bool MainWindow::openRecording(const QString& path) {
  if (controller_->busy()) return false;
  if (!recorder_->open(path)) return false;  // the status and log say why; the views are untouched
  const std::int64_t last = recorder_->lastTimeNs();
  // Slider ticks of whole microseconds, coarser if the run is longer than an int of them.
  replay_ns_per_tick_ = std::max<std::int64_t>(1000, last / std::numeric_limits<int>::max() + 1);
  replayed_ = 0;
  {
    const QSignalBlocker block(replay_slider_);
    replay_slider_->setRange(0, static_cast<int>(last / replay_ns_per_tick_) + 1);
    replay_slider_->setValue(replay_slider_->maximum());
  }
  replay_bar_->show();
  // Start from a clean slate (forces a reset even if nothing was replayed yet).
  prepareViews(recorder_->run());
  clearLog();
  had_error_ = false;
  replayTo(last);
  const auto events = static_cast<qulonglong>(recorder_->events().size());
  setStatus([this, path, events] { return tr("Opened recording %1: %2 events.").arg(path).arg(events); });
  updateControls();
  return true;
}

void MainWindow::replayTo(std::int64_t t_ns) {
  if (!recorder_->hasRecording()) return;
  const std::size_t upto = recorder_->eventsUpTo(t_ns);
  const auto& all = recorder_->events();
  if (upto < replayed_) {  // back in time: start over
    prepareViews(recorder_->run());
    clearLog();
    had_error_ = false;
    replayed_ = 0;
  }
  // The same path live events take; a prefix of the recorded order is what
  // the live views had seen by then.
  const std::vector<Event> batch(all.begin() + static_cast<std::ptrdiff_t>(replayed_),
                                 all.begin() + static_cast<std::ptrdiff_t>(upto));
  replayed_ = upto;
  onEvents(batch);
  retranslateRecordingUi();  // the time label
}

void MainWindow::leaveReplay() {
  if (!recorder_->hasRecording()) return;
  recorder_->closeRecording();
  replayed_ = 0;
  replay_bar_->hide();
}

bool MainWindow::exportChromeTrace(const QString& path) { return recorder_->exportChromeTrace(path); }

}  // namespace shardscope::ui
