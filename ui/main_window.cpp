// SPDX-License-Identifier: GPL-3.0-or-later
#include "main_window.h"

#include <QAction>
#include <QComboBox>
#include <QFileDialog>
#include <QMenu>
#include <QMenuBar>
#include <QSlider>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QLayout>
#include <QScrollArea>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>

#include "config_panel.h"
#include "i18n.h"
#include "recording_controller.h"
#include "views/loss_plot.h"
#include "estimate/memory_model.h"
#include "estimate/model_shape.h"
#include "views/event_view.h"
#include "views/memory_bars.h"
#include "views/pipeline_timeline.h"
#include "views/ring_allreduce_view.h"
#include "views/zero_view.h"

namespace shardscope::ui {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      panel_(new ConfigPanel),
      controller_(new RunController(this)),
      loss_(new LossPlot),
      memory_(new MemoryBars),
      tabs_(new QTabWidget),
      log_(new QPlainTextEdit),
      status_(new QLabel),
      language_(new QComboBox),
      language_label_(new QLabel(QStringLiteral("Language / 语言"))),
      run_(new QPushButton),
      pause_(new QPushButton),
      step_(new QPushButton),
      stop_(new QPushButton),
      recorder_(new RecordingController(this)) {
  language_->setObjectName(QStringLiteral("language"));
  for (const QString& code : availableLanguages()) language_->addItem(languageName(code), code);
  language_->setCurrentIndex(std::max(0, language_->findData(currentLanguage())));
  language_label_->setBuddy(language_);
  run_->setObjectName(QStringLiteral("run"));
  pause_->setObjectName(QStringLiteral("pause"));
  step_->setObjectName(QStringLiteral("step"));
  stop_->setObjectName(QStringLiteral("stop"));
  status_->setObjectName(QStringLiteral("status"));
  status_->setWordWrap(true);
  log_->setObjectName(QStringLiteral("log"));
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(2000);

  auto* buttons = new QHBoxLayout;
  for (QPushButton* b : {run_, pause_, step_, stop_}) buttons->addWidget(b);

  auto* left = new QWidget;
  auto* leftLayout = new QVBoxLayout(left);
  auto* languageRow = new QHBoxLayout;
  languageRow->addWidget(language_label_);
  languageRow->addWidget(language_, 1);
  leftLayout->addLayout(languageRow);
  leftLayout->addWidget(panel_, 1);
  leftLayout->addLayout(buttons);
  leftLayout->addWidget(status_);
  auto* scroll = new QScrollArea;
  scroll->setWidget(left);
  scroll->setWidgetResizable(true);
  scroll->setMinimumWidth(left->sizeHint().width() + 24);

  tabs_->setObjectName(QStringLiteral("views"));
  tabs_->addTab(loss_, QString());
  tab_sources_.emplace_back(loss_, QT_TR_NOOP("Loss"));
  buildRecordingUi();
  auto* tabsAndReplay = new QWidget;
  auto* tabsLayout = new QVBoxLayout(tabsAndReplay);
  tabsLayout->setContentsMargins(0, 0, 0, 0);
  tabsLayout->addWidget(replay_bar_);
  tabsLayout->addWidget(tabs_, 1);
  auto* views = new QSplitter(Qt::Vertical);
  views->addWidget(tabsAndReplay);
  views->addWidget(memory_);
  views->addWidget(log_);
  views->setStretchFactor(0, 3);
  views->setStretchFactor(1, 3);
  views->setStretchFactor(2, 1);
  views->setSizes({340, 340, 120});

  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(scroll);
  split->addWidget(views);
  split->setStretchFactor(1, 1);
  setCentralWidget(split);
  resize(1200, 800);

  connect(panel_, &ConfigPanel::changed, this, &MainWindow::updateControls);
  connect(language_, &QComboBox::activated, this, [this](int index) {
    setLanguage(language_->itemData(index).toString());
  });
  connect(run_, &QPushButton::clicked, this, &MainWindow::startRun);
  connect(pause_, &QPushButton::clicked, this, [this] {
    if (controller_->state() == RunController::State::paused) controller_->resume();
    else controller_->pause();
  });
  connect(step_, &QPushButton::clicked, this, &MainWindow::stepOnce);
  connect(stop_, &QPushButton::clicked, controller_, &RunController::stop);
  connect(controller_, &RunController::eventsDrained, this, &MainWindow::onEvents);
  connect(controller_, &RunController::stateChanged, this, &MainWindow::updateControls);
  connect(controller_, &RunController::runFinished, this, &MainWindow::onFinished);

  auto* timeline = new PipelineTimelineView;
  addView(timeline, timeline, QT_TR_NOOP("Pipeline"));
  auto* ring = new RingAllreduceView;
  addView(ring, ring, QT_TR_NOOP("Ring all-reduce"));
  auto* zero = new ZeroView;
  addView(zero, zero, QT_TR_NOOP("ZeRO"));
  prepareViews(panel_->config());
  retranslate();
  setStatus([this] { return tr("Ready: press Run to train on simulated ranks (threads on the CPU)."); });
  updateControls();
}

void MainWindow::retranslate() {
  setWindowTitle(tr("ShardScope"));
  run_->setText(tr("Run"));
  step_->setText(tr("Step once"));
  stop_->setText(tr("Stop"));
  log_->setPlaceholderText(tr("Engine log and errors appear here."));
  retranslateRecordingUi();
  for (const auto& [widget, source] : tab_sources_) {
    const int index = tabs_->indexOf(widget);
    if (index >= 0) tabs_->setTabText(index, tr(source));
  }
  {
    const QSignalBlocker block(language_);
    language_->setCurrentIndex(std::max(0, language_->findData(currentLanguage())));
  }
  updateControls();  // Pause/Resume and the Run tooltip
  if (status_text_) status_->setText(status_text_());
  // Another language, other label widths: let the settings column fit them,
  // once the children (which get LanguageChange after this window) re-worded.
  QMetaObject::invokeMethod(this, [this] { fitSettingsColumn(); }, Qt::QueuedConnection);
}

void MainWindow::fitSettingsColumn() {
  auto* scroll = findChild<QScrollArea*>();
  if (scroll == nullptr || scroll->widget() == nullptr) return;
  for (QLayout* layout : scroll->widget()->findChildren<QLayout*>()) layout->invalidate();
  scroll->setMinimumWidth(scroll->widget()->sizeHint().width() + 24);
}

void MainWindow::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QMainWindow::changeEvent(event);
}

MainWindow::~MainWindow() = default;  // the controller (a child) stops and joins its worker

QString MainWindow::statusText() const { return status_->text(); }
QString MainWindow::logText() const { return log_->toPlainText(); }

void MainWindow::addView(EventView* view, QWidget* widget, const QString& title) {
  views_.push_back(view);
  tabs_->addTab(widget, title);
}

void MainWindow::addView(EventView* view, QWidget* widget, const char* sourceTitle) {
  addView(view, widget, tr(sourceTitle));
  tab_sources_.emplace_back(widget, sourceTitle);
}

void MainWindow::prepareViews(const RunConfig& config) {
  for (EventView* view : views_) view->reset(config);
  loss_->clear();
  memory_->setRankCount(config.world_size());
  memory_->setPrediction(predictMemory(config));
  total_steps_ = config.steps;
}

std::vector<MemoryBytes> MainWindow::predictMemory(const RunConfig& config) {
  // The estimator's closed-form bytes for this exact run (engine/estimate):
  // the light bars beside the measured ones.
  try {
    const ModelShape shape = model_shape_from_config(find_model_preset(config.model), config.model);
    std::vector<MemoryBytes> per_rank;
    for (const RankMemory& rank : estimate_memory(shape, settings_for_run(config)).ranks)
      per_rank.push_back(rank.bytes);
    return per_rank;
  } catch (const std::exception&) {
    return {};  // a config the estimator cannot model: show the measurement alone
  }
}

void MainWindow::startRun() {
  if (controller_->busy() || !panel_->problem().isEmpty()) return;
  const RunConfig config = panel_->config();
  leaveReplay();
  prepareViews(config);
  had_error_ = false;
  const int ranks = config.world_size();
  const QString model = QString::fromStdString(config.model);
  setStatus([this, ranks, model] { return tr("Starting %1 on %n rank(s)...", nullptr, ranks).arg(model); });
  recorder_->beginRun(config);
  controller_->start(config);
}

void MainWindow::stepOnce() {
  if (controller_->state() == RunController::State::paused) {
    controller_->stepOnce();
    return;
  }
  if (controller_->busy() || !panel_->problem().isEmpty()) return;
  const RunConfig config = panel_->config();
  leaveReplay();
  prepareViews(config);
  had_error_ = false;
  recorder_->beginRun(config);
  controller_->startPaused(config);
  controller_->stepOnce();
}

void MainWindow::onEvents(const std::vector<Event>& events) {
  const Event* last_metrics = nullptr;
  for (const Event& e : events) {
    switch (e.kind) {
      case EventKind::step_metrics:
        loss_->addTrainLoss(static_cast<double>(e.step), static_cast<double>(e.loss));
        if (e.has_eval_loss) loss_->addEvalLoss(static_cast<double>(e.step), static_cast<double>(e.eval_loss));
        last_metrics = &e;
        break;
      case EventKind::memory_sample:
        memory_->setSample(e.rank, e.memory);
        break;
      case EventKind::log:
        appendLog(QString::fromUtf8(e.text_view().data(), static_cast<qsizetype>(e.text_view().size())), false);
        break;
      case EventKind::error: {
        const QString text = QString::fromUtf8(e.text_view().data(), static_cast<qsizetype>(e.text_view().size()));
        appendLog(text, true);
        setStatus([this, text] { return tr("Error: %1").arg(text); });
        had_error_ = true;
        break;
      }
      default:
        break;
    }
  }
  if (last_metrics != nullptr && !had_error_) {
    const std::int64_t step = last_metrics->step, total = total_steps_;
    const double loss = static_cast<double>(last_metrics->loss);
    const double tokens_per_s = static_cast<double>(last_metrics->tokens_per_s);
    setStatus([this, step, total, loss, tokens_per_s] {
      return tr("Step %1 of %2: loss %3, %4 tokens/s")
          .arg(step)
          .arg(total)
          .arg(loss, 0, 'f', 4)
          .arg(tokens_per_s, 0, 'f', 0);
    });
  }
  for (EventView* view : views_) {
    view->consume(events);
    view->refresh();
  }
  loss_->replot();
  memory_->replot();
}

void MainWindow::onFinished(bool ok, const QString& message) {
  const int steps = loss_->trainPointCount();
  if (!ok) {
    setStatus([this, message] { return tr("Run failed: %1").arg(message); });
  } else if (!message.isEmpty()) {
    setStatus([this, steps] { return tr("Stopped after %n step(s).", nullptr, steps); });
  } else {
    setStatus([this, steps] { return tr("Finished: %n step(s).", nullptr, steps); });
  }
  recorder_->endRun();  // its message (saved, or why not) goes to the log
  updateControls();
}

void MainWindow::setStatus(std::function<QString()> text) {
  status_text_ = std::move(text);
  status_->setText(status_text_());
}

void MainWindow::appendLog(const QString& line, bool error) {
  if (error) log_->appendHtml(QStringLiteral("<span style=\"color:#b00020\">%1</span>").arg(line.toHtmlEscaped()));
  else log_->appendPlainText(line);
}

void MainWindow::updateControls() {
  const auto state = controller_->state();
  const bool busy = controller_->busy();
  const QString problem = panel_->problem();
  panel_->setEnabled(!busy);
  run_->setEnabled(!busy && problem.isEmpty());
  run_->setToolTip(problem.isEmpty() ? tr("Train with these settings") : tr("Cannot run: %1").arg(problem));
  pause_->setEnabled(state == RunController::State::running || state == RunController::State::paused);
  pause_->setText(state == RunController::State::paused ? tr("Resume") : tr("Pause"));
  step_->setEnabled(state == RunController::State::paused || (!busy && problem.isEmpty()));
  stop_->setEnabled(busy && state != RunController::State::stopping);
  if (open_action_ != nullptr) {
    open_action_->setEnabled(!busy);
    record_action_->setEnabled(!busy);
    export_action_->setEnabled(!busy && (recorder_->hasRecording() || !recorder_->lastRecordingPath().isEmpty()));
  }
}

// --- recordings -------------------------------------------------------------

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
  prepareViews(recorder_->config());
  log_->clear();
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
    prepareViews(recorder_->config());
    log_->clear();
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
