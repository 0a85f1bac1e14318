// SPDX-License-Identifier: GPL-3.0-or-later
// Runs a Trainer's step loop on a worker thread (std::thread) with an EventQueue
// as its sink, and drains that queue on the GUI thread with a ~60 Hz QTimer.
// The GUI never waits for the engine: Run/Pause/Step once/Stop only set atomics
// that the worker reads between steps, and the end of a run is noticed by the
// timer (the worker thread is joined only once it has finished). Only the
// destructor and shutdown() (the window closing) wait, after asking the
// worker to stop: for the step it is in.
//
// Playback speed (slow motion for teaching): below 1, drained events go
// through a PlaybackPacer that hands them to the views at that fraction of
// real time, and the worker waits after each step until the views have
// replayed it: the pacer has released all of it and no view is still drawing
// it (the ring's animation, EventView::drawing). Training itself runs at full speed; it only pauses between steps.
//
// Ranks as processes (startProcesses, attach): no worker thread; a
// ProcessJob (process_job.h) receives the job's event stream into the same
// queue, so the views fill exactly as for threads. Pause and Step once do not
// apply to processes; Stop ends the job.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "config/run_config.h"
#include "core/memory_ledger.h"
#include "events/event.h"
#include "events/event_queue.h"
#include "plan/run_plan.h"
#include "playback_pacer.h"

namespace shardscope {
class Trainer;
}

namespace shardscope::ui {

class ProcessJob;

class RunController : public QObject {
  Q_OBJECT

 public:
  enum class State { idle, running, paused, stopping };

  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;

  State state() const { return state_; }
  bool busy() const { return state_ != State::idle; }
  bool runsProcesses() const { return job_ != nullptr; }  // the run's ranks are processes (or attached)
  // The ledger's peak bytes of every rank when the last run ended (each
  // category's own peak, by global rank: what the memory bars show); empty
  // before the first run ends or when it failed to start.
  std::vector<MemoryBytes> finalMemory() const;
  // The step directory the last run saved (RunConfig::save_dir: when it ended or was stopped); empty if none.
  std::string lastCheckpoint() const;
  double playbackSpeed() const { return speed_.load(); }
  // Steps the trainer finished / the views have been handed completely.
  std::int64_t stepsDone() const { return steps_done_.load(); }
  std::int64_t stepsReplayed() const { return steps_replayed_.load(); }

 public Q_SLOTS:
  // Starts a run of `config` (validated on the worker: a ConfigError arrives as
  // an error event). Ignored while a run is busy.
  // The run, validated and planned once by the window (plan/run_plan.h).
  void start(shardscope::RunPlanPtr run);
  void startPaused(shardscope::RunPlanPtr run);  // starts, then waits for stepOnce/resume
  // Starts the run with one process per rank (shardscope-cli launch, found
  // next to this program; setCliPath overrides it). A failure arrives as runFinished.
  void startProcesses(const shardscope::RunConfig& config);
  // Listens on 127.0.0.1:port for a job started elsewhere with `train
  // --events-to 127.0.0.1:PORT`; jobConfigReceived comes when it connects,
  // before its events. False, with `error` (the port in use), if it cannot listen.
  bool attach(int port, QString& error);
  void setCliPath(const QString& path) { cli_path_ = path; }
  // Restarts after a failure (as launch --max-restarts): a run whose rank
  // failed starts again from the latest checkpoint committed in its save_dir
  // (from the start without one), at most this many times; an injected failure
  // (--inject-failure) is not injected again. For the next start, threads or processes.
  void setMaxRestarts(int restarts) { max_restarts_ = restarts; }
  int jobPort() const;  // the port a process job listens on; 0 when none
  // The attached job's run as its stream's metadata plans it, with the schedule file's rows the job
  // read (not this window's copy of the file); null until jobConfigReceived.
  shardscope::RunPlanPtr jobPlan() const { return job_plan_; }
  QString cliPath() const;
  void pause();
  void resume();
  void stepOnce();  // while paused: run exactly one more optimizer step
  void stop();      // asks the worker to stop after the current step; never waits
  // The window is closing: stop, wait for the worker to finish its current
  // step and drop the undrained events (no runFinished). The one call that waits.
  void shutdown();
  // 1: real time; 0.5, 0.25, 0.1: slow motion (see above). Takes effect at once.
  void setPlaybackSpeed(double speed);
  // Slow motion: true while a view still draws events already handed to it
  // (the ring animates each transfer); the step counts as replayed only once
  // the pacer has released it and no view is drawing (EventView::drawing).
  void setViewsDrawing(std::function<bool()> drawing) { views_drawing_ = std::move(drawing); }

  // Drains the queue (the timer calls this; tests may too).
  void poll();

 Q_SIGNALS:
  void eventsDrained(const std::vector<shardscope::Event>& events);
  void stateChanged(shardscope::ui::RunController::State state);
  void runFinished(bool ok, const QString& message);
  // An attached job's run config (its stream's metadata), before its first event.
  void jobConfigReceived(const shardscope::RunConfig& config);
  // A failure found, the work it lost, a restart (process_job.h's launcherLine; threads: the worker's own).
  void failureNoted(const QString& line);

 private:
  void launch(RunPlanPtr run, bool paused);
  void resetRun();
  void beginJob(int port, QString& error);
  bool announceJobConfig();  // false while the attached job's config has not arrived
  void finishRun();
  void worker(RunPlanPtr run);
  void trainSteps(const RunPlanPtr& run);  // one attempt of worker's; throws as the trainer does
  // After a failed attempt: the run to start again (from the latest checkpoint), or null when none is left.
  RunPlanPtr restartAfter(const RunPlanPtr& failed, const std::string& cause, int restart);
  void saveCheckpoint(Trainer& trainer, const std::string& root);
  void setState(State state);

  QTimer timer_;
  State state_ = State::idle;
  std::unique_ptr<EventQueue> queue_;
  std::thread thread_;
  std::vector<Event> batch_;
  std::unique_ptr<ProcessJob> job_;  // ranks as processes; null for threads
  bool awaiting_config_ = false;     // attached: the views wait for the job's config
  RunPlanPtr job_plan_;              // attached: the job's run, planned from its metadata
  QString cli_path_;
  int max_restarts_ = 0;
  std::function<bool()> views_drawing_;

  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::atomic<int> step_budget_{0};  // steps allowed while paused
  std::atomic<bool> finished_{false};
  std::atomic<double> speed_{1.0};
  std::atomic<std::int64_t> steps_done_{0};      // set by the worker after each step
  std::atomic<std::int64_t> steps_replayed_{0};  // set by poll() once a step's events are all handed on
  PlaybackPacer pacer_;                          // GUI thread only

  mutable std::mutex result_mutex_;
  std::vector<MemoryBytes> final_memory_;  // guarded by result_mutex_
  std::string last_checkpoint_;            // guarded by result_mutex_
  bool ok_ = true;                         // guarded by result_mutex_
  std::string message_;                    // guarded by result_mutex_
};

}  // namespace shardscope::ui
