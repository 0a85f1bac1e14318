// SPDX-License-Identifier: GPL-3.0-or-later
// The main window: the run controls and the speed in a toolbar on top, the
// config panel on the left, the live views (loss plot, memory bars, log) on
// the right. Every view is fed only
// from engine events, drained by the RunController on the GUI thread.
#pragma once

#include <QMainWindow>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "events/event.h"
#include "run_controller.h"

class QAction;
class QDockWidget;
class QComboBox;
class QMenu;
class QSlider;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QScrollArea;
class QSplitter;
class QTabWidget;
class QTimer;
class QToolBar;

namespace spdlog {
class logger;
}

namespace shardscope::ui {

class ConfigPanel;
class LossPlot;
class MemoryBars;
class EventView;
class RecordingController;
class LivePlots;
class HiddenStatesView;
class QueuedLogSink;
class LessonsPanel;
class PlannerDialog;
class ScheduleCompareView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  ConfigPanel* configPanel() const { return panel_; }
  RunController* controller() const { return controller_; }
  LossPlot* lossPlot() const { return loss_; }
  MemoryBars* memoryBars() const { return memory_; }
  QPushButton* runButton() const { return run_; }
  QPushButton* stepButton() const { return step_; }
  QPushButton* stopButton() const { return stop_; }
  // "One step, slowly" (main_window_pacing.cpp): the last completed step drawn
  // again at the chosen speed in every view; while idle or paused.
  QPushButton* oneStepSlowlyButton() const { return slowly_; }
  std::int64_t lastCompletedStep() const { return last_completed_step_; }
  void replayLastStep();
  // "Pin this run" (main_window_compare.cpp): the last run's loss curve and
  // memory peaks stay while later runs are drawn beside them; unpin clears.
  QAction* pinAction() const { return pin_action_; }
  void pinRun();
  void unpinRun();
  // A lesson's second run: pins the run on screen, then loads `config`.
  void pinThenLoad(const RunConfig& config, double speed);
  // Shows or hides the memory bars and the log (checked: shown), in the run toolbar.
  QAction* memoryAndLogAction() const { return memory_and_log_action_; }
  QString statusText() const;
  QString logText() const;  // takes the log lines still queued first
  LivePlots* livePlots() const { return live_plots_; }
  HiddenStatesView* hiddenStatesView() const { return hidden_states_; }
  LessonsPanel* lessons() const { return lessons_; }
  QDockWidget* lessonsDock() const { return lessons_dock_; }
  // The window's spdlog logger: engine log/error/overflow events and the UI's
  // own messages go through it into the log panel (see log_sink.h).
  spdlog::logger& logger() const { return *logger_; }
  // Playback speed (slow motion): 1, 0.5, 0.25 or 0.1 of real time.
  QComboBox* speedBox() const { return speed_; }
  QString speedExplanation() const;
  static QString runLabel(const RunConfig& config);
  // Adds a view as a tab beside the loss plot; it receives every event batch.
  // A QString title stays as given; a source text (mark it QT_TR_NOOP) is
  // translated now and again whenever the language changes.
  void addView(EventView* view, QWidget* widget, const QString& title);
  void addView(EventView* view, QWidget* widget, const char* sourceTitle);
  // The language switch ("en" / "zh_CN"); choosing an entry calls setLanguage().
  QComboBox* languageBox() const { return language_; }
  QTabWidget* viewTabs() const { return tabs_; }

  // Recordings (File menu). The slider scrubs an opened recording: 0 .. the
  // last event's time, in slider ticks (replayTimeNs converts).
  RecordingController* recorder() const { return recorder_; }
  QSlider* replaySlider() const { return replay_slider_; }
  std::int64_t replayTimeNs(int sliderValue) const;
  // Opens a .ssrun and shows all of it in every view; on failure the status
  // and log name the file and the views stay as they were. Not while a run is busy.
  bool openRecording(const QString& path);
  bool exportChromeTrace(const QString& path);
  // The memory planner (File → Plan memory…, File → Import config…), made on first use.
  PlannerDialog* planner();
  QAction* planAction() const { return plan_action_; }
  QAction* importConfigAction() const { return import_config_action_; }
  QAction* saveCheckpointsAction() const { return save_checkpoints_action_; }
  // File → Attach…: listens on 127.0.0.1:port for a job started from a shell
  // with `train --events-to 127.0.0.1:PORT`; its events fill the views as a
  // run's do. False (the reason in the status) if the port cannot be used.
  bool attachToJob(int port);
  QAction* attachAction() const { return attach_action_; }
  QAction* resumeAction() const { return resume_action_; }
  // What the menu actions do after their folder dialog (tests call them directly).
  // every: also every N steps (0: only when a run ends or is stopped), so a restart loses less.
  void setCheckpointDir(const QString& dir, int every = 0);
  bool setResumeFrom(const QString& path);  // false (and the reason in the status) if it is no checkpoint
  // File → Open config for a run…: a DeepSpeed JSON (*.json) or an accelerate
  // YAML (*.yaml, *.yml) sets the panel as `train --deepspeed / --accelerate`
  // sets a run. Settings the panel does not show (warm-up, clipping, the loss
  // scaler's knobs) apply to every run until another config or a lesson is
  // chosen. False (the file and key named in the status and log) if refused.
  bool openRunConfig(const QString& path);
  QAction* openRunConfigAction() const { return open_run_config_action_; }
  // File → Open schedule… (main_window_schedules.cpp): a pipeline schedule
  // written by hand (torch.distributed.pipelining's CSV), checked by the
  // engine's reader against the panel's pp and micro-batches before it is
  // set; a refusal (naming the rank and action) is shown in a dialog and the
  // status, and false is returned. Runs then use the file until it is cleared.
  bool openScheduleFile(const QString& path);
  QAction* openScheduleAction() const { return open_schedule_action_; }
  // The "Schedules" tab: the panel's layout under every schedule that trains (views/schedule_compare.h).
  ScheduleCompareView* scheduleComparison() const { return schedule_compare_; }

 public Q_SLOTS:
  void startRun();
  void stepOnce();

 protected:
  void changeEvent(QEvent* event) override;
  // Closing during a run stops the engine (the worker is joined) and drops
  // the half-written recording: an existing file at its path stays intact.
  void closeEvent(QCloseEvent* event) override;

 private:
  void retranslate();
  void setUpControls();
  QToolBar* buildRunToolBar();
  QScrollArea* buildSettingsColumn();
  void fitToScreen();
  QSplitter* buildViewsColumn();
  void fitSettingsColumn();
  void onEvents(const std::vector<shardscope::Event>& events);
  void onFinished(bool ok, const QString& message);
  void updateControls();
  void prepareViews(const RunPlan& run);
  // The run these settings give, validated and planned once (plan/run_plan.h);
  // null where they are refused, the reason in the status and log if `report`.
  RunPlanPtr planRun(RunConfig config, bool report = true);
  void appendLog(const QString& line, bool error);  // through the logger
  void drainLog() const;                             // queued lines into the panel
  static QString levelName(int level);               // spdlog's level, in the interface's language
  void clearLog();
  void logEvent(const shardscope::Event& e);
  void buildRecordingUi();
  void retranslateRecordingUi();
  void buildPlannerUi();
  void retranslatePlannerUi();
  // File → Save checkpoints… / Resume from checkpoint… (main_window_checkpoints.cpp)
  void buildCheckpointUi();
  // File → Attach… and runs whose ranks are processes (main_window_processes.cpp)
  void buildProcessUi();
  void retranslateProcessUi();
  void onJobConfig(const RunConfig& config);
  void retranslateCheckpointUi();
  void buildCompareUi(QToolBar* bar);  // main_window_compare.cpp
  void retranslateCompareUi();
  void loadLessonRun(const RunConfig& config, double speed);  // the panel set, the lesson's pace chosen
  void buildPacingUi();  // main_window_pacing.cpp
  void retranslatePacingUi();
  void applyPlaybackSpeed(double speed);
  void buildRunConfigUi();  // main_window_run_config.cpp
  void buildScheduleUi();   // main_window_schedules.cpp
  void retranslateScheduleUi();
  void retranslateRunConfigUi();
  void chooseCheckpointDir();
  void chooseResume();
  RunConfig runConfigToStart();  // the panel's run with the chosen checkpoint folder and resume
  void replayTo(std::int64_t t_ns);
  void leaveReplay();  // a live run takes the views over
  // The status line, re-worded on a language change by calling `text` again.
  void setStatus(std::function<QString()> text);

  ConfigPanel* panel_;
  RunController* controller_;
  LossPlot* loss_;
  MemoryBars* memory_;
  QTabWidget* tabs_;
  std::vector<EventView*> views_;
  LivePlots* live_plots_;
  HiddenStatesView* hidden_states_ = nullptr;
  LessonsPanel* lessons_ = nullptr;
  QDockWidget* lessons_dock_ = nullptr;
  QMenu* lessons_menu_ = nullptr;
  QPlainTextEdit* log_;
  std::shared_ptr<QueuedLogSink> log_sink_;
  std::shared_ptr<spdlog::logger> logger_;
  QTimer* log_timer_;
  QComboBox* speed_;
  QLabel* speed_label_;
  QLabel* speed_note_;
  QLabel* status_;
  std::function<QString()> status_text_;
  QComboBox* language_;
  QLabel* language_label_;
  std::vector<std::pair<QWidget*, const char*>> tab_sources_;  // tabs re-titled on a language change
  QPushButton* run_;
  QPushButton* pause_;
  QPushButton* step_;
  QPushButton* stop_;
  QPushButton* slowly_ = nullptr;
  QAction* pin_action_ = nullptr;
  QString run_label_;                     // the setup of the run on screen (runLabel)
  std::int64_t last_completed_step_ = 0;  // the last step whose metrics arrived
  QAction* memory_and_log_action_ = nullptr;
  RecordingController* recorder_;
  QMenu* file_menu_ = nullptr;
  QAction* open_action_ = nullptr;
  QAction* record_action_ = nullptr;
  QAction* export_action_ = nullptr;
  QAction* plan_action_ = nullptr;
  QAction* import_config_action_ = nullptr;
  QAction* save_checkpoints_action_ = nullptr;
  QAction* resume_action_ = nullptr;
  QAction* attach_action_ = nullptr;
  QString checkpoint_dir_;  // every run from here on saves there at its end (empty: none)
  int checkpoint_every_ = 0;  // ... and every this many steps (0: only at the end)
  QString resume_dir_;      // the next run resumes from this step directory (once)
  QAction* open_run_config_action_ = nullptr;
  QAction* open_schedule_action_ = nullptr;
  ScheduleCompareView* schedule_compare_ = nullptr;
  // What an opened run config set that the panel does not show: (key, value) by the schema's rows.
  std::vector<std::pair<std::string, nlohmann::json>> file_settings_;
  PlannerDialog* planner_ = nullptr;
  QWidget* replay_bar_ = nullptr;
  QLabel* replay_label_ = nullptr;
  QSlider* replay_slider_ = nullptr;
  QLabel* replay_time_ = nullptr;
  std::int64_t replay_ns_per_tick_ = 1000;
  std::size_t replayed_ = 0;  // events of the opened recording shown in the views
  std::int64_t total_steps_ = 0;
  bool had_error_ = false;
};

}  // namespace shardscope::ui
