// SPDX-License-Identifier: GPL-3.0-or-later
// Runs a Trainer's step loop on a worker thread (std::thread) with an EventQueue
// as its sink, and drains that queue on the GUI thread with a ~60 Hz QTimer.
// The GUI never waits for the engine: Run/Pause/Step once/Stop only set atomics
// that the worker reads between steps, and the end of a run is noticed by the
// timer (the worker thread is joined only once it has finished). Only the
// destructor waits, after asking the worker to stop.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/memory_ledger.h"
#include "events/event.h"
#include "events/event_queue.h"
#include "train/run_config.h"

namespace shardscope::ui {

class RunController : public QObject {
  Q_OBJECT

 public:
  enum class State { idle, running, paused, stopping };

  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;

  State state() const { return state_; }
  bool busy() const { return state_ != State::idle; }
  // The ledger's current bytes of every rank when the last run ended (by
  // global rank); empty before the first run ends or when it failed to start.
  std::vector<MemoryBytes> finalMemory() const;
  // Events the queue dropped in the current/last run (fine-grained spans only).
  std::uint64_t droppedEvents() const;
  int pollIntervalMs() const { return timer_.interval(); }

 public Q_SLOTS:
  // Starts a run of `config` (validated on the worker: a ConfigError arrives as
  // an error event). Ignored while a run is busy.
  void start(const shardscope::RunConfig& config);
  void startPaused(const shardscope::RunConfig& config);  // starts, then waits for stepOnce/resume
  void pause();
  void resume();
  void stepOnce();  // while paused: run exactly one more optimizer step
  void stop();      // asks the worker to stop after the current step; never waits

  // Drains the queue (the timer calls this; tests may too).
  void poll();

 Q_SIGNALS:
  void eventsDrained(const std::vector<shardscope::Event>& events);
  void stateChanged(shardscope::ui::RunController::State state);
  void runFinished(bool ok, const QString& message);

 private:
  void launch(const RunConfig& config, bool paused);
  void worker(RunConfig config);
  void setState(State state);

  QTimer timer_;
  State state_ = State::idle;
  std::unique_ptr<EventQueue> queue_;
  std::thread thread_;
  std::vector<Event> batch_;

  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::atomic<int> step_budget_{0};  // steps allowed while paused
  std::atomic<bool> finished_{false};

  mutable std::mutex result_mutex_;
  std::vector<MemoryBytes> final_memory_;  // guarded by result_mutex_
  bool ok_ = true;                         // guarded by result_mutex_
  std::string message_;                    // guarded by result_mutex_
};

}  // namespace shardscope::ui
