// SPDX-License-Identifier: GPL-3.0-or-later
// MainWindow, part 1: the layout, the run controls and their state, the
// language switch. Event dispatch is in main_window_events.cpp, the File menu
// and the replay bar in main_window_recording.cpp.
#include "main_window.h"

#include <spdlog/logger.h>

#include <QAction>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QEvent>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLayout>
#include <QMenu>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QStyle>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>

#include "config/lesson_file.h"
#include "config/run_choices.h"
#include "config_panel.h"
#include "estimate/memory_model.h"
#include "estimate/model_shape.h"
#include "field_widgets.h"
#include "i18n.h"
#include "lessons.h"
#include "log_sink.h"
#include "recording_controller.h"
#include "views/context_parallel_view.h"
#include "views/event_view.h"
#include "views/experts_view.h"
#include "views/hidden_states_view.h"
#include "views/live_plots.h"
#include "views/loss_plot.h"
#include "views/memory_bars.h"
#include "views/pipeline_timeline.h"
#include "views/rank_waits_view.h"
#include "views/ring_allreduce_view.h"
#include "views/schedule_compare.h"
#include "views/tensor_parallel_view.h"
#include "views/zero_view.h"

namespace shardscope::ui {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      panel_(new ConfigPanel),
      controller_(new RunController(this)),
      loss_(new LossPlot),
      memory_(new MemoryBars),
      tabs_(new QTabWidget),
      live_plots_(new LivePlots),
      log_(new QPlainTextEdit),
      log_sink_(std::make_shared<QueuedLogSink>()),
      logger_(std::make_shared<spdlog::logger>("shardscope", log_sink_)),
      log_timer_(new QTimer(this)),
      speed_(new QComboBox),
      speed_label_(new QLabel),
      speed_note_(new QLabel),
      status_(new QLabel),
      language_(new QComboBox),
      language_label_(new QLabel(QStringLiteral("Language / 语言"))),
      run_(new QPushButton),
      pause_(new QPushButton),
      step_(new QPushButton),
      stop_(new QPushButton),
      recorder_(new RecordingController(this)) {
  setUpControls();
  buildPacingUi();
  auto* settings = buildSettingsColumn();
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(settings);
  split->addWidget(buildViewsColumn());
  split->setStretchFactor(1, 1);
  split->setChildrenCollapsible(false);
  split->setSizes({settings->widget()->sizeHint().width() + 24, 800});  // labels beside their fields where there is room
  fitSettingsColumn();
  setCentralWidget(split);
  addToolBar(Qt::TopToolBarArea, buildRunToolBar());

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
  connect(speed_, &QComboBox::currentIndexChanged, this, [this](int index) {
    applyPlaybackSpeed(speed_->itemData(index).toDouble());
    speed_note_->setText(speedExplanation());
    logger_->info("{}", speedExplanation().toStdString());
  });
  connect(stop_, &QPushButton::clicked, controller_, &RunController::stop);
  connect(controller_, &RunController::eventsDrained, this, &MainWindow::onEvents);
  connect(controller_, &RunController::stateChanged, this, &MainWindow::updateControls);
  connect(controller_, &RunController::runFinished, this, &MainWindow::onFinished);

  // Lessons: text beside the views, hidden until chosen from the Lessons menu.
  lessons_ = new LessonsPanel;
  lessons_dock_ = new QDockWidget(this);
  lessons_dock_->setObjectName(QStringLiteral("lessonsDock"));
  lessons_dock_->setWidget(lessons_);
  lessons_dock_->setMinimumWidth(280);  // with the settings and the views, within 1280 px
  addDockWidget(Qt::RightDockWidgetArea, lessons_dock_);
  lessons_dock_->hide();
  lessons_menu_ = menuBar()->addMenu(QString());
  lessons_menu_->addAction(lessons_dock_->toggleViewAction());
  connect(lessons_, &LessonsPanel::tryLesson, this, [this](const RunConfig& config, double speed) {
    if (!controller_->busy()) loadLessonRun(config, speed);
  });
  connect(lessons_, &LessonsPanel::tryComparison, this, &MainWindow::pinThenLoad);
  connect(lessons_, &LessonsPanel::openView, this, [this](const QString& view) {  // a lesson's shardscope: link
    if (view == QLatin1String("schedules")) tabs_->setCurrentWidget(schedule_compare_);
  });
  if (const RunPlanPtr run = planRun(panel_->config(), false)) prepareViews(*run);  // the views' empty frames
  retranslate();
  fitToScreen();
  setStatus([this] { return tr("Ready: press Run to train on simulated ranks (threads on the CPU)."); });
  updateControls();
}

void MainWindow::loadLessonRun(const RunConfig& config, double speed) {
  file_settings_.clear();  // a lesson's run is the lesson's, not an opened config's
  panel_->setConfig(config);
  const int index = speed_->findData(speed);
  if (index >= 0) speed_->setCurrentIndex(index);  // the lesson's pace; the user may change it
}

// Names, items and the log's timer of the controls made in the initializer list.
void MainWindow::setUpControls() {
  language_->setObjectName(QStringLiteral("language"));
  for (const QString& code : availableLanguages()) language_->addItem(languageName(code), code);
  language_->setCurrentIndex(std::max(0, language_->findData(currentLanguage())));
  language_label_->setBuddy(language_);
  ignoreWheelUnlessFocused(language_);  // it sits in the scrolling settings column
  run_->setObjectName(QStringLiteral("run"));
  pause_->setObjectName(QStringLiteral("pause"));
  step_->setObjectName(QStringLiteral("step"));
  stop_->setObjectName(QStringLiteral("stop"));
  status_->setObjectName(QStringLiteral("status"));
  status_->setWordWrap(true);
  log_->setObjectName(QStringLiteral("log"));
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(2000);
  logger_->set_level(spdlog::level::debug);
  log_timer_->setInterval(50);  // the log is read, not animated: 20 Hz is plenty
  connect(log_timer_, &QTimer::timeout, this, [this] { drainLog(); });
  log_timer_->start();
  speed_->setObjectName(QStringLiteral("playbackSpeed"));
  for (double speed : kLessonPlaybackSpeeds) speed_->addItem(QString(), speed);
  speed_->setSizeAdjustPolicy(QComboBox::AdjustToContents);  // re-fits its items' words in the other language
  speed_->setMinimumContentsLength(12);  // and room for "1×（实时）", whose fallback glyphs it under-measures
  speed_label_->setBuddy(speed_);
  speed_note_->setObjectName(QStringLiteral("speedNote"));
  speed_note_->setWordWrap(true);
}

// The run controls and the playback speed, in a toolbar over both columns:
// always in sight, however long the settings column is. Its last button hides
// the memory bars and the log, so that the active view takes the whole height.
QToolBar* MainWindow::buildRunToolBar() {
  auto* bar = new QToolBar;
  bar->setObjectName(QStringLiteral("runToolBar"));
  bar->setMovable(false);
  bar->setFloatable(false);
  for (QPushButton* button : {run_, pause_, step_, stop_, slowly_}) bar->addWidget(button);
  bar->addSeparator();
  bar->addWidget(speed_label_);
  bar->addWidget(speed_);
  bar->addSeparator();
  buildCompareUi(bar);
  memory_and_log_action_ = bar->addAction(QString());
  memory_and_log_action_->setObjectName(QStringLiteral("showMemoryAndLog"));
  memory_and_log_action_->setCheckable(true);
  memory_and_log_action_->setChecked(true);
  connect(memory_and_log_action_, &QAction::toggled, this, [this](bool shown) {
    memory_->setVisible(shown);
    log_->setVisible(shown);
  });
  return bar;
}

// The window opens at a comfortable size where the screen has room, and
// within the screen's free area (less the task bar) where it has not, centred.
void MainWindow::fitToScreen() {
  const QScreen* here = screen();
  if (here == nullptr) return;
  const QRect available = here->availableGeometry();
  const QSize size = QSize(1500, 950).boundedTo(available.size()).expandedTo(minimumSizeHint());
  setGeometry(QStyle::alignedRect(Qt::LeftToRight, Qt::AlignCenter, size, available));
}

// The left column: language, the run's settings, the speed's explanation and
// the status line, scrolling up and down.
QScrollArea* MainWindow::buildSettingsColumn() {
  auto* left = new QWidget;
  auto* leftLayout = new QVBoxLayout(left);
  auto* languageRow = new QHBoxLayout;
  languageRow->addWidget(language_label_);
  languageRow->addWidget(language_, 1);
  leftLayout->addLayout(languageRow);
  leftLayout->addWidget(status_);
  leftLayout->addWidget(speed_note_);
  leftLayout->addWidget(panel_, 1);
  auto* scroll = new QScrollArea;
  scroll->setWidget(left);
  scroll->setWidgetResizable(true);
  scroll->setObjectName(QStringLiteral("settingsColumn"));
  return scroll;
}

// The right column: the view tabs (with the replay bar over them), the memory
// bars and the log, one above the other.
QSplitter* MainWindow::buildViewsColumn() {
  tabs_->setObjectName(QStringLiteral("views"));
  tabs_->addTab(loss_, QString());
  tab_sources_.emplace_back(loss_, QT_TR_NOOP("Loss"));
  auto* timeline = new PipelineTimelineView;
  addView(timeline, timeline, QT_TR_NOOP("Pipeline"));
  auto* ring = new RingAllreduceView;
  addView(ring, ring, QT_TR_NOOP("Ring all-reduce"));
  auto* zero = new ZeroView;
  addView(zero, zero, QT_TR_NOOP("ZeRO"));
  auto* tensor = new TensorParallelView;
  addView(tensor, tensor, QT_TR_NOOP("Tensor parallel"));
  addView(live_plots_, live_plots_, QT_TR_NOOP("Live plots"));
  auto* waits = new WaitsView;
  addView(waits, waits, QT_TR_NOOP("Waits"));
  auto* context = new ContextParallelView;
  addView(context, context, QT_TR_NOOP("Context parallel"));
  auto* experts = new ExpertsView;
  addView(experts, experts, QT_TR_NOOP("Experts"));
  hidden_states_ = new HiddenStatesView;  // not an event view: it runs a model of its own
  tabs_->addTab(hidden_states_, QString());
  tab_sources_.emplace_back(hidden_states_, QT_TR_NOOP("Hidden states"));
  buildRecordingUi();
  buildPlannerUi();
  buildCheckpointUi();
  buildProcessUi();
  buildRunConfigUi();
  buildScheduleUi();
  auto* tabsAndReplay = new QWidget;
  auto* tabsLayout = new QVBoxLayout(tabsAndReplay);
  tabsLayout->setContentsMargins(0, 0, 0, 0);
  tabsLayout->addWidget(replay_bar_);
  tabsLayout->addWidget(tabs_, 1);
  auto* views = new QSplitter(Qt::Vertical);
  views->addWidget(tabsAndReplay);
  views->addWidget(memory_);
  views->addWidget(log_);
  views->setStretchFactor(0, 5);  // the tab views first: on a 720 px screen the ring and the live plots need the height
  views->setStretchFactor(1, 2);
  views->setStretchFactor(2, 1);
  views->setSizes({500, 220, 80});
  views->setCollapsible(0, false);  // the views never vanish; the memory bars and the log may
  return views;
}

void MainWindow::retranslate() {
  setWindowTitle(tr("ShardScope"));
  run_->setText(tr("Run"));
  step_->setText(tr("Step once"));
  stop_->setText(tr("Stop"));
  log_->setPlaceholderText(tr("Engine log and errors appear here."));
  speed_label_->setText(tr("Playback speed"));
  memory_and_log_action_->setText(tr("Memory and log"));
  memory_and_log_action_->setToolTip(
      tr("Show or hide the memory bars and the log under the views: hidden, the view takes the whole height."));
  speed_->setItemText(0, tr("1× (real time)"));
  speed_->setItemText(1, tr("½×"));
  speed_->setItemText(2, tr("¼×"));
  speed_->setItemText(3, tr("1/10×"));
  speed_->setToolTip(tr("Slow motion for teaching: the views replay each step's events at this fraction of real "
                        "time, and the engine waits between steps until they have. The training math is unchanged."));
  speed_note_->setText(speedExplanation());
  retranslateRecordingUi();
  retranslatePlannerUi();
  retranslateCheckpointUi();
  retranslateProcessUi();
  retranslateRunConfigUi();
  retranslateScheduleUi();
  retranslatePacingUi();
  retranslateCompareUi();
  lessons_menu_->setTitle(tr("&Lessons"));
  lessons_dock_->setWindowTitle(tr("Lessons"));
  lessons_dock_->toggleViewAction()->setText(tr("Show lessons"));
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

// The settings column scrolls up and down, never sideways: it is at least as
// wide as its content's minimum (a field goes under its label where the row
// is too narrow for both, QFormLayout::WrapLongRows) plus the scroll bar.
void MainWindow::fitSettingsColumn() {
  auto* scroll = findChild<QScrollArea*>(QStringLiteral("settingsColumn"));
  if (scroll == nullptr || scroll->widget() == nullptr) return;
  for (QLayout* layout : scroll->widget()->findChildren<QLayout*>()) layout->invalidate();
  scroll->setMinimumWidth(scroll->widget()->minimumSizeHint().width() + scroll->verticalScrollBar()->sizeHint().width() +
                          2 * scroll->frameWidth());
}

void MainWindow::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QMainWindow::changeEvent(event);
}

MainWindow::~MainWindow() = default;  // the controller (a child) stops and joins its worker

void MainWindow::closeEvent(QCloseEvent* event) {
  if (controller_->busy()) {
    recorder_->abandonRun();  // nothing partial over an existing recording
    controller_->shutdown();  // waits for the current step only
    logger_->info("{}", tr("Window closed during the run: training stopped, nothing saved.").toStdString());
  }
  QMainWindow::closeEvent(event);
}

QString MainWindow::speedExplanation() const {
  const double speed = speed_->currentData().toDouble();
  if (speed >= 1.0)
    return tr(
        "Real time: the views show the engine's events as they arrive; the ring's animation may fall behind "
        "and says by how many steps.");
  return tr("Slow motion: the views replay each step at %1 speed; training waits between steps.")
      .arg(speed_->currentText());
}

QString MainWindow::statusText() const { return status_->text(); }
QString MainWindow::logText() const {
  drainLog();
  return log_->toPlainText();
}

void MainWindow::addView(EventView* view, QWidget* widget, const QString& title) {
  views_.push_back(view);
  view->setPlaybackSpeed(controller_->playbackSpeed());
  tabs_->addTab(widget, title);
}

void MainWindow::addView(EventView* view, QWidget* widget, const char* sourceTitle) {
  addView(view, widget, tr(sourceTitle));
  tab_sources_.emplace_back(widget, sourceTitle);
}

// A run's setup in a few words, naming the loss plot's curves: "gpt-tiny, batch 32, 4 accumulation steps of 8".
QString MainWindow::runLabel(const RunConfig& config) {
  QString label = tr("%1, batch %2").arg(QString::fromStdString(config.model)).arg(config.batch);
  if (config.accum > 1) label += tr(", %1 accumulation steps of %2").arg(config.accum).arg(config.batch / config.accum);
  if (config.checkpoint) label += tr(", checkpointing");
  if (config.mixed_precision()) {
    const std::string_view precision = precision_name(config.precision);
    label += QStringLiteral(", ") + QString::fromUtf8(precision.data(), static_cast<qsizetype>(precision.size()));
  }
  return label;
}

void MainWindow::prepareViews(const RunPlan& run) {
  const RunConfig& config = run.config();
  for (EventView* view : views_) view->reset(run);
  run_label_ = runLabel(config);
  loss_->startRun(run_label_);
  memory_->setRunLabel(run_label_);
  memory_->setTensorParallel(config.layout.tp());
  memory_->setRankCount(config.world_size());
  memory_->setPrediction(panel_->predictionFor(run));  // the light bars beside the measured ones
  memory_->setMixedPrecision(config.mixed_precision());
  total_steps_ = config.steps;
  last_completed_step_ = 0;
}

void MainWindow::startRun() {
  if (controller_->busy() || !panel_->problem().isEmpty()) return;
  RunConfig wanted = runConfigToStart();
  if (panel_->ranksAsProcesses()) {  // each process has its own cores (cli_launch.h): the wall clock, no GPU profile
    wanted.clock = ClockKind::wall;
    wanted.gpu_profile = "none";
    if (wanted.slow_rank >= 0)
      logger_->warn("{}", tr("Ranks as processes run on the wall clock: the straggler setting slows a rank on the "
                             "virtual clock of threads, so this run has none.")
                              .toStdString());
    wanted.slow_rank = -1;
  }
  controller_->setMaxRestarts(panel_->maxRestarts());
  const RunPlanPtr run = planRun(wanted);
  if (!run) return;
  const RunConfig& config = run->config();
  leaveReplay();
  prepareViews(*run);
  had_error_ = false;
  const int ranks = config.world_size();
  const QString model = QString::fromStdString(config.model);
  setStatus([this, ranks, model] { return tr("Starting %1 on %n rank(s)...", nullptr, ranks).arg(model); });
  logger_->info("{}", statusText().toStdString());
  recorder_->beginRun(*run);
  if (panel_->ranksAsProcesses())
    controller_->startProcesses(config);  // each process validates and plans its own run
  else
    controller_->start(run);
}

void MainWindow::stepOnce() {
  if (controller_->state() == RunController::State::paused) {
    controller_->stepOnce();
    return;
  }
  if (controller_->busy() || !panel_->problem().isEmpty()) return;
  const RunPlanPtr run = planRun(runConfigToStart());
  if (!run) return;
  leaveReplay();
  prepareViews(*run);
  had_error_ = false;
  recorder_->beginRun(*run);
  controller_->startPaused(run);
  controller_->stepOnce();
}

void MainWindow::updateControls() {
  const auto state = controller_->state();
  const bool busy = controller_->busy();
  const QString problem = panel_->problem();
  panel_->setEnabled(!busy);
  run_->setEnabled(!busy && problem.isEmpty());
  run_->setToolTip(problem.isEmpty() ? tr("Train with these settings") : tr("Cannot run: %1").arg(problem));
  // Processes run on to the end (or Stop): no pause, no single steps.
  pause_->setEnabled((state == RunController::State::running || state == RunController::State::paused) &&
                     !controller_->runsProcesses());
  pause_->setText(state == RunController::State::paused ? tr("Resume") : tr("Pause"));
  step_->setEnabled(state == RunController::State::paused ||
                    (!busy && problem.isEmpty() && !panel_->ranksAsProcesses()));
  stop_->setEnabled(busy && state != RunController::State::stopping);
  pin_action_->setEnabled(!busy || loss_->pinned());
  slowly_->setEnabled(last_completed_step_ > 0 && (!busy || state == RunController::State::paused));
  if (open_action_ != nullptr) {
    open_action_->setEnabled(!busy);
    record_action_->setEnabled(!busy);
    attach_action_->setEnabled(!busy);
    export_action_->setEnabled(!busy && (recorder_->hasRecording() || !recorder_->lastRecordingPath().isEmpty()));
  }
}

}  // namespace shardscope::ui
